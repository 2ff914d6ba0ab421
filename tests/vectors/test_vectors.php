<?php

/*
 * test_vectors: the PHP encoder of examples/symfony (what its ladder
 * sender publishes with) gives every answer of ladder.tsv, the vectors
 * `cutover encode` generates. Exit 0 when all match, 1 naming each one
 * that does not.
 *
 * Usage: php test_vectors.php [ladder.tsv]
 */

require_once __DIR__.'/../../examples/symfony/src/LadderEncoder.php';
require_once __DIR__.'/../../examples/symfony/src/LadderRangeException.php';

use Cutover\Ladder\LadderEncoder;

$file = $argv[1] ?? __DIR__.'/ladder.tsv';
$lines = file($file, \FILE_IGNORE_NEW_LINES | \FILE_SKIP_EMPTY_LINES);
if (false === $lines) {
    fwrite(\STDERR, "test_vectors: cannot read $file\n");
    exit(1);
}
$opt = static function (string $v): ?string {
    return '-' === $v ? null : $v;
};
$failures = 0;
$cases = 0;
$refused = 0;
foreach ($lines as $n => $line) {
    if ('#' === $line[0] || 0 === strncmp($line, "naming\t", 7)) {
        continue;
    }
    [$naming, $prefix, $unit, $levels, $max, $delay, $dest, $result, $units, $rounded, $exchange, $key] = explode("\t", $line);
    ++$cases;
    $want = 'ok' === $result ? [(int) $units, (int) $rounded, $exchange, $key] : 'refused';
    try {
        $enc = new LadderEncoder($naming, $opt($prefix), null === $opt($unit) ? null : (int) $unit,
            null === $opt($levels) ? null : (int) $levels, null === $opt($max) ? null : (int) $max);
        $r = $enc->encode((int) $delay, $dest);
        $got = [$r['units'], $r['rounded_ms'], $r['exchange'], $r['routing_key']];
    } catch (\InvalidArgumentException|\RangeException $e) {
        $got = 'refused';
        ++$refused;
    }
    if ($got !== $want) {
        ++$failures;
        fprintf(\STDERR, "FAIL: %s:%d: %s %s ms to %s: expected %s, got %s\n", $file, $n + 1, $naming, $delay, $dest,
            json_encode($want), json_encode($got));
    }
}
if (0 === $cases) {
    fwrite(\STDERR, "test_vectors: no case in $file\n");
    exit(1);
}
printf("test_vectors: %d cases (%d refused), %d failure(s)\n", $cases, $refused, $failures);
exit($failures ? 1 : 0);
