<?php

namespace Cutover\E2e;

use Psr\Container\ContainerInterface;

/* The services locators Messenger asks for (senders by transport name,
 * retry strategies), without a DI container. */
final class ArrayContainer implements ContainerInterface
{
    private $services;

    public function __construct(array $services)
    {
        $this->services = $services;
    }

    public function get(string $id)
    {
        if (!isset($this->services[$id])) {
            throw new \OutOfBoundsException("no service $id");
        }

        return $this->services[$id];
    }

    public function has(string $id): bool
    {
        return isset($this->services[$id]);
    }
}
