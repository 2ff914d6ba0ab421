<?php

namespace Cutover\E2e;

/* Fails a share of the messages so that retries go through Symfony's retry
 * path: every 5th message fails its first attempt, every 15th its first
 * two; all succeed in the end (the retry strategy allows 3 retries). */
final class PingHandler
{
    public $attempt = 0;

    public function __invoke(Ping $ping): void
    {
        $fails = 0 === $ping->id % 15 ? 2 : (0 === $ping->id % 5 ? 1 : 0);
        if ($this->attempt < $fails) {
            throw new \RuntimeException("planned failure of message {$ping->id}, attempt {$this->attempt}");
        }
    }
}
