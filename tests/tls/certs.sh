# certs.sh: the certificates test_tls.sh uses, made with openssl into DIR
# (sourced; tls_make_certs DIR). A CA (ca.pem) and, signed by it, a server
# certificate for localhost and 127.0.0.1 (server.pem, server.key), a
# client certificate (client.pem, client.key) and the same key encrypted
# with the passphrase in $TLS_TEST_PASSPHRASE (client-enc.key); a second,
# unrelated CA (wrong-ca.pem); and a server certificate that expired
# (expired.pem, with server.key). Valid for two days.
# shellcheck shell=sh
tls_make_certs() { # DIR
	_d=$1
	_q="-loglevel error"
	mkdir -p "$_d"
	cat >"$_d/server.ext" <<EXT
subjectAltName = DNS:localhost, IP:127.0.0.1
extendedKeyUsage = serverAuth
EXT
	printf 'extendedKeyUsage = clientAuth\n' >"$_d/client.ext"
	openssl req -x509 -newkey rsa:2048 -nodes -keyout "$_d/ca.key" \
	    -out "$_d/ca.pem" -days 2 -subj /CN=cutover-test-ca 2>/dev/null &&
	openssl req -x509 -newkey rsa:2048 -nodes -keyout "$_d/wrong-ca.key" \
	    -out "$_d/wrong-ca.pem" -days 2 -subj /CN=cutover-wrong-ca 2>/dev/null &&
	openssl req -newkey rsa:2048 -nodes -keyout "$_d/server.key" \
	    -out "$_d/server.csr" -subj /CN=localhost 2>/dev/null &&
	openssl x509 -req -in "$_d/server.csr" -CA "$_d/ca.pem" -CAkey "$_d/ca.key" \
	    -CAcreateserial -days 2 -extfile "$_d/server.ext" -out "$_d/server.pem" 2>/dev/null &&
	openssl x509 -req -in "$_d/server.csr" -CA "$_d/ca.pem" -CAkey "$_d/ca.key" \
	    -CAcreateserial -days -1 -extfile "$_d/server.ext" -out "$_d/expired.pem" 2>/dev/null &&
	openssl req -newkey rsa:2048 -nodes -keyout "$_d/client.key" \
	    -out "$_d/client.csr" -subj /CN=cutover-test-client 2>/dev/null &&
	openssl x509 -req -in "$_d/client.csr" -CA "$_d/ca.pem" -CAkey "$_d/ca.key" \
	    -CAcreateserial -days 2 -extfile "$_d/client.ext" -out "$_d/client.pem" 2>/dev/null &&
	openssl pkey -in "$_d/client.key" -aes256 -passout env:TLS_TEST_PASSPHRASE \
	    -out "$_d/client-enc.key" 2>/dev/null &&
	chmod 644 "$_d"/*.pem "$_d"/*.key
}
