<?php

/*
 * UnleashFlag: reads the migration's feature from Unleash's client API as
 * a producer would (GET /api/client/features/NAME with a client token,
 * `enabled`), at most once a second. The first read must succeed; a later
 * failure keeps the last value.
 */

namespace Cutover\E2e;

final class UnleashFlag
{
    private $url;
    private $token;
    private $on;
    private $readAt = 0.0;

    public function __construct(string $baseUrl, string $feature, string $clientToken)
    {
        $this->url = rtrim($baseUrl, '/').'/api/client/features/'.rawurlencode($feature);
        $this->token = $clientToken;
        if (null === $this->read()) {
            throw new \RuntimeException("cannot read feature $feature from {$this->url}");
        }
    }

    public function __invoke(): bool
    {
        if (microtime(true) - $this->readAt >= 1.0) {
            $this->read();
        }

        return $this->on;
    }

    private function read(): ?bool
    {
        $ctx = stream_context_create(['http' => ['timeout' => 2.0, 'ignore_errors' => false,
            'header' => "Authorization: {$this->token}\r\n"]]);
        $body = @file_get_contents($this->url, false, $ctx);
        $this->readAt = microtime(true);
        $doc = false === $body ? null : json_decode($body, true);
        if (!\is_array($doc) || !\array_key_exists('enabled', $doc)) {
            return null;
        }
        $this->on = (bool) $doc['enabled'];

        return $this->on;
    }
}
