<?php

/*
 * LadderTransport: an AMQP transport whose sends go through LadderSender
 * and whose receiving is the transport's own. Register it under the
 * transport's name: Symfony's retry listener finds the sender of the
 * transport a message failed in by that name, so retries take the ladder
 * too once the flag is on.
 */

namespace Cutover\Ladder;

use Symfony\Component\Messenger\Envelope;
use Symfony\Component\Messenger\Transport\TransportInterface;

final class LadderTransport implements TransportInterface
{
    private $inner;
    private $sender;

    public function __construct(TransportInterface $inner, LadderSender $sender)
    {
        $this->inner = $inner;
        $this->sender = $sender;
    }

    public function get(): iterable
    {
        return $this->inner->get();
    }

    public function ack(Envelope $envelope): void
    {
        $this->inner->ack($envelope);
    }

    public function reject(Envelope $envelope): void
    {
        $this->inner->reject($envelope);
    }

    public function send(Envelope $envelope): Envelope
    {
        return $this->sender->send($envelope);
    }
}
