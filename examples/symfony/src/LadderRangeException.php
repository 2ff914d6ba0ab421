<?php

namespace Cutover\Ladder;

/* A delay the ladder cannot carry without delivering it early: below 0, or
 * beyond its maximum (or its max delay). */
final class LadderRangeException extends \RangeException
{
}
