<?php

/*
 * RecordingSender: logs each send of the app (first dispatches and the
 * retry listener's retries alike) with the wall clock taken just BEFORE
 * it, the delay and the attempt, and the path it took (ladder when the
 * ladder sender stamped it). A message may not arrive before that time
 * plus its delay, whatever path it took: the test checks each attempt so.
 */

namespace Cutover\E2e;

use Cutover\Ladder\LadderSentStamp;
use Symfony\Component\Messenger\Envelope;
use Symfony\Component\Messenger\Stamp\DelayStamp;
use Symfony\Component\Messenger\Stamp\RedeliveryStamp;
use Symfony\Component\Messenger\Transport\Sender\SenderInterface;

final class RecordingSender implements SenderInterface
{
    private $inner;
    private $log;

    public function __construct(SenderInterface $inner, EventLog $log)
    {
        $this->inner = $inner;
        $this->log = $log;
    }

    public function send(Envelope $envelope): Envelope
    {
        $msg = $envelope->getMessage();
        $attempt = (string) RedeliveryStamp::getRetryCountFromEnvelope($envelope);
        $delay = $envelope->last(DelayStamp::class);
        $delayMs = (string) ($delay ? $delay->getDelay() : 0);
        $at = (string) EventLog::nowMs();
        try {
            $sent = $this->inner->send($envelope);
        } catch (\Throwable $e) {
            $this->log->write('sendfail', (string) $msg->id, $attempt, $at, $delayMs, str_replace(["\t", "\n"], ' ', $e->getMessage()));
            throw $e;
        }
        $path = null !== $sent->last(LadderSentStamp::class) ? 'ladder' : 'old';
        $this->log->write('send', (string) $msg->id, $attempt, $at, $delayMs, $path);

        return $sent;
    }
}
