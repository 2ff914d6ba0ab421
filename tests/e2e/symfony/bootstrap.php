<?php

/*
 * bootstrap: the e2e app's transport as an application would wire it, from
 * the environment the test sets: a Symfony AMQP transport (exchange
 * NAME.x, queue NAME.messages, delays through NAME.delays), decorated so
 * that once the flag is on its delayed sends and retries go into the
 * ladder NAME.ladder (unit SF_UNIT_MS, SF_LEVELS levels); every send is
 * logged to the file given.
 *
 * SF_DSN (amqp://user:pass@host:port/%2f), SF_NAME, SF_UNIT_MS, SF_LEVELS,
 * SF_FEATURE, UNLEASH_URL, UNLEASH_CLIENT_TOKEN.
 */

namespace Cutover\E2e;

use Cutover\Ladder\LadderEncoder;
use Cutover\Ladder\LadderPublisher;
use Cutover\Ladder\LadderSender;
use Cutover\Ladder\LadderTransport;
use Symfony\Component\Messenger\Bridge\Amqp\Transport\AmqpTransport;
use Symfony\Component\Messenger\Bridge\Amqp\Transport\Connection;
use Symfony\Component\Messenger\Transport\Serialization\PhpSerializer;

require_once __DIR__.'/../../../examples/symfony/src/autoload.php';
spl_autoload_register(static function (string $class): void {
    if (0 === strncmp($class, __NAMESPACE__.'\\', \strlen(__NAMESPACE__) + 1)) {
        require __DIR__.'/'.substr($class, \strlen(__NAMESPACE__) + 1).'.php';
    }
});

function env(string $name): string
{
    $v = getenv($name);
    if (false === $v || '' === $v) {
        fwrite(\STDERR, "symfony e2e app: $name is not set\n");
        exit(2);
    }

    return $v;
}

/** @return array{0: RecordingSender, 1: LadderTransport} the sender to register under the transport's name, the transport */
function transport(EventLog $log): array
{
    $name = env('SF_NAME');
    $dsn = env('SF_DSN');
    $serializer = new PhpSerializer();
    $connection = Connection::fromDsn($dsn, [
        'exchange' => ['name' => "$name.x"],
        'queues' => ["$name.messages" => []],
        'delay' => ['exchange_name' => "$name.delays"],
        'confirm_timeout' => 5,
    ]);
    $inner = new AmqpTransport($connection, $serializer);

    $u = parse_url($dsn);
    $amqp = new \AMQPConnection(['host' => $u['host'], 'port' => $u['port'] ?? 5672,
        'vhost' => urldecode(trim($u['path'] ?? '/%2f', '/')), 'login' => urldecode($u['user'] ?? 'guest'),
        'password' => urldecode($u['pass'] ?? 'guest')]);
    $amqp->connect();
    $publisher = new LadderPublisher(new \AMQPChannel($amqp), 5.0);
    $encoder = new LadderEncoder('cutover', "$name.ladder", (int) env('SF_UNIT_MS'), (int) env('SF_LEVELS'));
    $flag = new UnleashFlag(env('UNLEASH_URL'), env('SF_FEATURE'), env('UNLEASH_CLIENT_TOKEN'));
    // A delayed message goes where Symfony's delay queue dead-letters it:
    // the transport's exchange (no routing key); a retry goes to the queue
    // it failed in.
    $sender = new LadderSender($inner, $serializer, $publisher, $encoder, $flag,
        ['' => "$name.x"], ["$name.messages" => "$name.messages"]);
    $transport = new LadderTransport($inner, $sender);

    return [new RecordingSender($transport, $log), $transport];
}
