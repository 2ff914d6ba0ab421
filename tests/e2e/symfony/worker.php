<?php

/*
 * worker: consumes NAME.messages with Messenger's Worker, handles each Ping
 * (PingHandler fails some), and retries failures through Messenger's own
 * retry listener, which sends through the transport's sender (the ladder
 * sender) with its DelayStamp: 1337 ms, then 2006 ms. Logs receives to
 * SF_LOG; stops when the file SF_STOP_FILE exists.
 */

namespace Cutover\E2e;

use Symfony\Component\EventDispatcher\EventDispatcher;
use Symfony\Component\Messenger\Event\WorkerRunningEvent;
use Symfony\Component\Messenger\EventListener\SendFailedMessageForRetryListener;
use Symfony\Component\Messenger\Handler\HandlersLocator;
use Symfony\Component\Messenger\MessageBus;
use Symfony\Component\Messenger\Middleware\HandleMessageMiddleware;
use Symfony\Component\Messenger\Retry\MultiplierRetryStrategy;
use Symfony\Component\Messenger\Worker;

require __DIR__.'/bootstrap.php';

$log = new EventLog(env('SF_LOG'));
[$sender, $transport] = transport($log);
$handler = new PingHandler();
$bus = new MessageBus([new AttemptMiddleware($log, $handler),
    new HandleMessageMiddleware(new HandlersLocator([Ping::class => [$handler]]))]);

$events = new EventDispatcher();
$events->addSubscriber(new SendFailedMessageForRetryListener(new ArrayContainer(['sf' => $sender]),
    new ArrayContainer(['sf' => new MultiplierRetryStrategy(3, 1337, 1.5)])));
$worker = new Worker(['sf' => $transport], $bus, $events);
$stop = env('SF_STOP_FILE');
$events->addListener(WorkerRunningEvent::class, static function () use ($worker, $stop): void {
    if (file_exists($stop)) {
        $worker->stop();
    }
});
// 10 ms between polls of an empty queue (Messenger's default is 1 s).
$worker->run(['sleep' => 10000]);
