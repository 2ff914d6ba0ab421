<?php

/*
 * LadderPublisher: publishes one message to a ladder's entry exchange as
 * the ladder's contract asks: mandatory (a message no destination takes is
 * returned, not dropped) and with publisher confirms; a send counts only
 * once the broker confirmed it.
 */

namespace Cutover\Ladder;

use Symfony\Component\Messenger\Exception\TransportException;

final class LadderPublisher
{
    private $channel;
    private $confirmTimeout;
    private $acked = false;
    private $nacked = false;
    private $returned;

    /**
     * @param \AMQPChannel $channel        a channel of its own: it is put in confirm mode
     * @param float        $confirmTimeout seconds to wait for the broker's verdict
     */
    public function __construct(\AMQPChannel $channel, float $confirmTimeout = 10.0)
    {
        $this->channel = $channel;
        $this->confirmTimeout = $confirmTimeout;
        $channel->confirmSelect();
        // The broker sends basic.return before the ack of a mandatory message
        // it could not route; waitForConfirm hands both to these callbacks.
        $channel->setReturnCallback(function (int $code, string $text, string $exchange, string $key): void {
            $this->returned = "$code $text ($exchange, $key)";
        });
        $channel->setConfirmCallback(function (): bool {
            $this->acked = true;

            return false;
        }, function (): bool {
            $this->nacked = true;

            return false;
        });
    }

    /**
     * @throws TransportException nacked, returned, or no verdict in time
     */
    public function publish(string $exchangeName, string $routingKey, string $body, array $attributes): void
    {
        $exchange = new \AMQPExchange($this->channel);
        $exchange->setName($exchangeName);
        $this->acked = $this->nacked = false;
        $this->returned = null;
        try {
            $exchange->publish($body, $routingKey, \AMQP_MANDATORY, $attributes);
            $this->channel->waitForConfirm($this->confirmTimeout);
        } catch (\AMQPException $e) {
            throw new TransportException("ladder publish to $exchangeName ($routingKey): ".$e->getMessage(), 0, $e);
        }
        if (null !== $this->returned) {
            throw new TransportException("ladder publish returned: {$this->returned}: no destination bound for it");
        }
        if ($this->nacked || !$this->acked) {
            throw new TransportException("ladder publish to $exchangeName ($routingKey) ".($this->nacked ? 'nacked' : 'not confirmed'));
        }
    }
}
