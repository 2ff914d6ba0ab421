<?php

namespace Cutover\E2e;

use Symfony\Component\Messenger\Envelope;
use Symfony\Component\Messenger\Middleware\MiddlewareInterface;
use Symfony\Component\Messenger\Middleware\StackInterface;
use Symfony\Component\Messenger\Stamp\ReceivedStamp;
use Symfony\Component\Messenger\Stamp\RedeliveryStamp;

/* Logs each received message (its id, its attempt, the wall clock) before
 * its handler runs, and tells the handler which attempt it is; logs it
 * again as done when the handler succeeded (a failure is retried: the
 * message is not done until a later attempt is). */
final class AttemptMiddleware implements MiddlewareInterface
{
    private $log;
    private $handler;

    public function __construct(EventLog $log, PingHandler $handler)
    {
        $this->log = $log;
        $this->handler = $handler;
    }

    public function handle(Envelope $envelope, StackInterface $stack): Envelope
    {
        if (null === $envelope->last(ReceivedStamp::class)) {
            return $stack->next()->handle($envelope, $stack);
        }
        $id = (string) $envelope->getMessage()->id;
        $attempt = RedeliveryStamp::getRetryCountFromEnvelope($envelope);
        $this->log->write('recv', $id, (string) $attempt, (string) EventLog::nowMs());
        $this->handler->attempt = $attempt;
        $envelope = $stack->next()->handle($envelope, $stack);
        $this->log->write('done', $id, (string) $attempt, (string) EventLog::nowMs());

        return $envelope;
    }
}
