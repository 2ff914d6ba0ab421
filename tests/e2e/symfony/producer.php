<?php

/*
 * producer: dispatches Ping messages with a DelayStamp through Messenger's
 * bus at SF_RATE a second, cycling through the delays of SF_DELAYS (ms,
 * comma-separated), and from when the file SF_LATE_FILE exists through
 * SF_DELAYS_LATE too (delays first used then), until the file SF_STOP_FILE
 * exists. Every send goes to the log SF_LOG (RecordingSender).
 */

namespace Cutover\E2e;

use Symfony\Component\Messenger\MessageBus;
use Symfony\Component\Messenger\Middleware\SendMessageMiddleware;
use Symfony\Component\Messenger\Stamp\DelayStamp;
use Symfony\Component\Messenger\Transport\Sender\SendersLocator;

require __DIR__.'/bootstrap.php';

$log = new EventLog(env('SF_LOG'));
[$sender] = transport($log);
$bus = new MessageBus([new SendMessageMiddleware(new SendersLocator([Ping::class => ['sf']],
    new ArrayContainer(['sf' => $sender])))]);

$early = array_map('intval', explode(',', env('SF_DELAYS')));
$late = array_map('intval', explode(',', env('SF_DELAYS_LATE')));
$interval = 1.0 / (float) env('SF_RATE');
$start = microtime(true);
$delays = $early;
for ($id = 1; !file_exists(env('SF_STOP_FILE')); ++$id) {
    if ($delays === $early && file_exists(env('SF_LATE_FILE'))) {
        // The late delays first, so that each is used within a second.
        $delays = array_merge($late, $early);
        $id0 = $id;
    }
    $delay = $delays[($id - ($id0 ?? 1)) % \count($delays)];
    try {
        $bus->dispatch(new Ping($id, $delay), [new DelayStamp($delay)]);
    } catch (\Throwable $e) {
        fwrite(\STDERR, "producer: message $id: {$e->getMessage()}\n");
    }
    $wait = $start + $id * $interval - microtime(true);
    if ($wait > 0) {
        usleep((int) ($wait * 1e6));
    }
}
