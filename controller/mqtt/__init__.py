"""MQTT reporting and command intake: topics, schemas, the link, the outbox publisher, alerts, commands.

See docs/mqtt.md. Wiring (service): ``MqttLink`` → ``OutboxPublisher(journal, link).start()`` →
``CommandIntake(...).start()`` → ``await link.start()``.
"""
