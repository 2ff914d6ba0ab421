<?php

namespace Cutover\Ladder;

use Symfony\Component\Messenger\Stamp\NonSendableStampInterface;

/* On the envelope LadderSender returns: it went into the ladder, there. */
final class LadderSentStamp implements NonSendableStampInterface
{
    public $exchange;
    public $routingKey;
    public $roundedMs;

    public function __construct(string $exchange, string $routingKey, int $roundedMs)
    {
        $this->exchange = $exchange;
        $this->routingKey = $routingKey;
        $this->roundedMs = $roundedMs;
    }
}
