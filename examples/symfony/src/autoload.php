<?php

// The example's classes, and Debian's autoloaders for Symfony Messenger
// (php-symfony-messenger, php-symfony-amqp-messenger) and the event
// dispatcher its worker uses: no composer.
require_once '/usr/share/php/Symfony/Component/Messenger/autoload.php';
if (is_file('/usr/share/php/Symfony/Component/EventDispatcher/autoload.php')) {
    require_once '/usr/share/php/Symfony/Component/EventDispatcher/autoload.php';
}
spl_autoload_register(static function (string $class): void {
    $prefix = 'Cutover\\Ladder\\';
    if (0 === strncmp($class, $prefix, \strlen($prefix))) {
        $file = __DIR__.'/'.substr($class, \strlen($prefix)).'.php';
        if (is_file($file)) {
            require $file;
        }
    }
});
