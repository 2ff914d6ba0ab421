<?php

namespace Cutover\E2e;

/* One line per event, tab-separated, flushed at once (the test reads the
 * files while the processes run, and after a kill). Times are wall clock
 * ms: both processes and the test run on one machine. */
final class EventLog
{
    private $fh;

    public function __construct(string $path)
    {
        $this->fh = fopen($path, 'a');
        if (false === $this->fh) {
            throw new \RuntimeException("cannot open $path");
        }
    }

    public static function nowMs(): int
    {
        return (int) floor(microtime(true) * 1000);
    }

    public function write(string ...$fields): void
    {
        fwrite($this->fh, implode("\t", $fields)."\n");
        fflush($this->fh);
    }
}
