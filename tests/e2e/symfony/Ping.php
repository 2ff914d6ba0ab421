<?php

namespace Cutover\E2e;

/* The message the e2e app dispatches: its sequence number and the delay it
 * was dispatched with. */
final class Ping
{
    public $id;
    public $delayMs;

    public function __construct(int $id, int $delayMs)
    {
        $this->id = $id;
        $this->delayMs = $delayMs;
    }
}
