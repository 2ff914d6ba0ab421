<?php

/*
 * LadderSender: decorates a Symfony Messenger AMQP transport's sender so
 * that, once the migration's feature flag reads on, a delayed envelope goes
 * into the bounded delay ladder instead of a delay queue of its own.
 *
 * Everything else is the inner sender's: an envelope without a DelayStamp
 * (or with a delay of 0), and every envelope while the flag reads off.
 * Symfony's retry listener sends a retry through the transport's own
 * sender, so decorating the transport (LadderTransport) covers retries too.
 *
 * What goes into the ladder is what AmqpSender would publish (the
 * serializer's body and headers, the AmqpStamp's attributes, the received
 * message's attributes for a retry), minus the broker's dead-letter
 * history: a message carrying x-death from a level queue would be taken
 * for a dead-letter cycle when it expires there again, and dropped.
 */

namespace Cutover\Ladder;

use Symfony\Component\Messenger\Bridge\Amqp\Transport\AmqpReceivedStamp;
use Symfony\Component\Messenger\Bridge\Amqp\Transport\AmqpStamp;
use Symfony\Component\Messenger\Envelope;
use Symfony\Component\Messenger\Exception\LogicException;
use Symfony\Component\Messenger\Stamp\DelayStamp;
use Symfony\Component\Messenger\Stamp\RedeliveryStamp;
use Symfony\Component\Messenger\Transport\Sender\SenderInterface;
use Symfony\Component\Messenger\Transport\Serialization\SerializerInterface;

final class LadderSender implements SenderInterface
{
    /* The broker's dead-letter history (see above). */
    public const STRIPPED_HEADERS = [
        'x-death', 'x-first-death-queue', 'x-first-death-reason', 'x-first-death-exchange',
        'x-last-death-queue', 'x-last-death-reason', 'x-last-death-exchange',
    ];

    private $inner;
    private $serializer;
    private $publisher;
    private $encoder;
    private $flagOn;
    private $byRoutingKey;
    private $byQueue;

    /**
     * @param callable(): bool      $flagOn       reads the feature flag (cache it: it is called per send)
     * @param array<string, string> $byRoutingKey a delayed message's routing key ('' for none) => its
     *                                            ladder destination: where Symfony's delay queue would
     *                                            dead-letter it (the transport's exchange, that key)
     * @param array<string, string> $byQueue      a retried message's queue => its ladder destination:
     *                                            Symfony retries into that one queue
     */
    public function __construct(SenderInterface $inner, SerializerInterface $serializer, LadderPublisher $publisher,
        LadderEncoder $encoder, callable $flagOn, array $byRoutingKey, array $byQueue)
    {
        $this->inner = $inner;
        $this->serializer = $serializer;
        $this->publisher = $publisher;
        $this->encoder = $encoder;
        $this->flagOn = $flagOn;
        $this->byRoutingKey = $byRoutingKey;
        $this->byQueue = $byQueue;
    }

    public function send(Envelope $envelope): Envelope
    {
        $delayStamp = $envelope->last(DelayStamp::class);
        $delay = $delayStamp ? $delayStamp->getDelay() : 0;
        if ($delay <= 0 || !($this->flagOn)()) {
            return $this->inner->send($envelope);
        }

        $encoded = $this->serializer->encode($envelope);
        $headers = $encoded['headers'] ?? [];
        $amqpStamp = $envelope->last(AmqpStamp::class);
        if (isset($headers['Content-Type'])) {
            if (!$amqpStamp || !isset($amqpStamp->getAttributes()['content_type'])) {
                $amqpStamp = AmqpStamp::createWithAttributes(['content_type' => $headers['Content-Type']], $amqpStamp);
            }
            unset($headers['Content-Type']);
        }
        $received = $envelope->last(AmqpReceivedStamp::class);
        $retry = $received instanceof AmqpReceivedStamp && null !== $envelope->last(RedeliveryStamp::class);
        if ($received instanceof AmqpReceivedStamp) {
            $amqpStamp = AmqpStamp::createFromAmqpEnvelope($received->getAmqpEnvelope(), $amqpStamp,
                $retry ? $received->getQueueName() : null);
        }

        $destination = $this->destination($retry, $retry ? $received->getQueueName() : ($amqpStamp ? $amqpStamp->getRoutingKey() : null));
        $ladder = $this->encoder->encode($delay, $destination);

        $attributes = $amqpStamp ? $amqpStamp->getAttributes() : [];
        $attributes['headers'] = array_diff_key(array_merge($attributes['headers'] ?? [], $headers),
            array_flip(self::STRIPPED_HEADERS));
        unset($attributes['expiration']);
        $attributes['delivery_mode'] = $attributes['delivery_mode'] ?? 2;
        $attributes['timestamp'] = $attributes['timestamp'] ?? time();
        $this->publisher->publish($ladder['exchange'], $ladder['routing_key'], $encoded['body'], $attributes);

        return $envelope->with(new LadderSentStamp($ladder['exchange'], $ladder['routing_key'], $ladder['rounded_ms']));
    }

    private function destination(bool $retry, ?string $keyOrQueue): string
    {
        $map = $retry ? $this->byQueue : $this->byRoutingKey;
        $k = $keyOrQueue ?? '';
        if (!isset($map[$k])) {
            throw new LogicException(sprintf('no ladder destination for the %s "%s"', $retry ? 'retry queue' : 'routing key', $k));
        }

        return $map[$k];
    }
}
