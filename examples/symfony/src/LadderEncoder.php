<?php

/*
 * LadderEncoder: a delay and a destination as the ladder takes them, the
 * same answers as `cutover encode` (tests/vectors/ladder.tsv holds them).
 *
 * A delay is rounded UP to whole units (never early), written as one bit
 * word per level, most significant first, then the destination; the message
 * enters at the level of its highest bit (the delivery exchange for 0
 * units). A delay beyond the ladder, or beyond its max delay, is refused:
 * truncating it would deliver it early.
 */

namespace Cutover\Ladder;

final class LadderEncoder
{
    /* Each naming style's fixed parts, as orchestrator/base/ladder_naming.c has them. */
    private const STYLES = [
        'cutover' => ['prefix' => 'required', 'default_prefix' => 'delay', 'joiner' => '.',
            'level' => 'level.', 'digits' => 2, 'delivery' => 'delivery',
            'fixed_levels' => 0, 'fixed_unit_ms' => 0],
        'kombu' => ['prefix' => 'optional', 'default_prefix' => '', 'joiner' => '_',
            'level' => 'celery_delayed_', 'digits' => 0, 'delivery' => 'celery_delayed_delivery',
            'fixed_levels' => 28, 'fixed_unit_ms' => 1000],
        'nservicebus' => ['prefix' => 'none', 'default_prefix' => '', 'joiner' => '',
            'level' => 'nsb.v2.delay-level-', 'digits' => 2, 'delivery' => 'nsb.v2.delay-delivery',
            'fixed_levels' => 28, 'fixed_unit_ms' => 1000],
    ];
    private const MAX_LEVELS = 32;
    private const KEY_MAX = 255;

    private $style;
    private $prefix;
    private $unitMs;
    private $levels;
    private $limitMs;

    /**
     * @param string   $naming     cutover, kombu or nservicebus
     * @param ?string  $prefix     null: the style's own
     * @param ?int     $unitMs     null: the style's fixed unit
     * @param ?int     $levels     null: from $maxDelayMs, or the style's fixed levels
     * @param ?int     $maxDelayMs the most a producer may ask (a plan's ladder.max_delay)
     */
    public function __construct(string $naming, ?string $prefix, ?int $unitMs, ?int $levels, ?int $maxDelayMs = null)
    {
        if (!isset(self::STYLES[$naming])) {
            throw new \InvalidArgumentException("naming '$naming': expected cutover, kombu or nservicebus");
        }
        $st = self::STYLES[$naming];
        $unitMs = $unitMs ?? $st['fixed_unit_ms'];
        if ($unitMs < 1) {
            throw new \InvalidArgumentException('the unit must be at least 1 ms');
        }
        if (null === $levels) {
            $levels = null !== $maxDelayMs ? self::levelsFor(intdiv($maxDelayMs + $unitMs - 1, $unitMs)) : $st['fixed_levels'];
        }
        if ($st['fixed_levels'] && ($levels > $st['fixed_levels'] || $unitMs !== $st['fixed_unit_ms'])) {
            throw new \InvalidArgumentException("$naming naming has {$st['fixed_levels']} levels of {$st['fixed_unit_ms']} ms");
        }
        $levels = $st['fixed_levels'] ?: $levels;
        if ($levels < 1 || $levels > self::MAX_LEVELS) {
            throw new \InvalidArgumentException("$levels levels: expected 1 to ".self::MAX_LEVELS);
        }
        if ('none' === $st['prefix']) {
            $prefix = '';
        } else {
            $prefix = $prefix ?? $st['default_prefix'];
            if (('' !== $prefix || 'required' === $st['prefix'])
                && !preg_match('/^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$/D', $prefix)) {
                throw new \InvalidArgumentException("prefix '$prefix': expected [A-Za-z0-9_-] words separated by '.'");
            }
        }
        $this->style = $st;
        $this->prefix = $prefix;
        $this->unitMs = $unitMs;
        $this->levels = $levels;
        $max = ((1 << $levels) - 1) * $unitMs;
        if (null !== $maxDelayMs && ($maxDelayMs < 1 || $maxDelayMs > $max)) {
            throw new \InvalidArgumentException("max delay $maxDelayMs ms: the ladder reaches $max ms");
        }
        $this->limitMs = $maxDelayMs ?? $max;
    }

    public function maxDelayMs(): int
    {
        return $this->limitMs;
    }

    /**
     * @return array{units: int, rounded_ms: int, exchange: string, routing_key: string}
     *
     * @throws LadderRangeException    a delay below 0 or beyond the ladder's maximum
     * @throws \InvalidArgumentException a destination the ladder cannot route
     */
    public function encode(int $delayMs, string $destination): array
    {
        if ($delayMs < 0) {
            throw new LadderRangeException("delay $delayMs ms is negative");
        }
        $units = intdiv($delayMs, $this->unitMs) + ($delayMs % $this->unitMs ? 1 : 0);
        if ($units > (1 << $this->levels) - 1 || $delayMs > $this->limitMs) {
            throw new LadderRangeException("delay $delayMs ms is beyond the ladder's maximum of {$this->limitMs} ms");
        }
        $this->checkDestination($destination);
        $key = '';
        for ($k = $this->levels - 1; $k >= 0; --$k) {
            $key .= (($units >> $k) & 1) ? '1.' : '0.';
        }

        return [
            'units' => $units,
            'rounded_ms' => $units * $this->unitMs,
            'exchange' => 0 === $units ? $this->name($this->style['delivery']) : $this->levelExchange(self::highestBit($units)),
            'routing_key' => $key.$destination,
        ];
    }

    private function checkDestination(string $dest): void
    {
        if ('' === $dest || false !== strpbrk($dest, '*#') || \in_array('', explode('.', $dest), true)) {
            throw new \InvalidArgumentException("destination '$dest': expected non-empty words separated by '.', no '*' or '#'");
        }
        if (2 * $this->levels + \strlen($dest) > self::KEY_MAX) {
            throw new \InvalidArgumentException("destination '$dest' makes a routing key over ".self::KEY_MAX.' bytes');
        }
    }

    private function levelExchange(int $k): string
    {
        $digits = $this->style['digits'];

        return $this->name($this->style['level'].($digits ? sprintf('%0'.$digits.'d', $k) : (string) $k));
    }

    private function name(string $stem): string
    {
        return '' === $this->prefix ? $stem : $this->prefix.$this->style['joiner'].$stem;
    }

    private static function highestBit(int $units): int
    {
        $k = -1;
        for (; 0 !== $units; $units >>= 1) {
            ++$k;
        }

        return $k;
    }

    private static function levelsFor(int $maxUnits): int
    {
        $bits = 0;
        for (; 0 !== $maxUnits; $maxUnits >>= 1) {
            ++$bits;
        }

        return max(1, $bits);
    }
}
