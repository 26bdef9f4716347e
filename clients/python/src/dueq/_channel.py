"""Channels to dueq (sync and asyncio) from a `Config`."""

import grpc

from .errors import InvalidArgument

# Replies up to the service's largest --max-message-size default and then some.
_OPTIONS = [
    ("grpc.max_receive_message_length", 64 * 1024 * 1024),
    ("grpc.max_send_message_length", 64 * 1024 * 1024),
    # After a restart of the service, reconnect within a fraction of a second rather
    # than grpc's default (up to two minutes): the worker's own backoff paces retries.
    ("grpc.initial_reconnect_backoff_ms", 100),
    ("grpc.min_reconnect_backoff_ms", 100),
    ("grpc.max_reconnect_backoff_ms", 2000),
    ("grpc.keepalive_time_ms", 30000),
    ("grpc.keepalive_timeout_ms", 10000),
]


def _read(path, field):
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError as err:
        raise InvalidArgument(f"{field}: cannot read {path}: {err.strerror}") from None


def _credentials(config):
    return grpc.ssl_channel_credentials(
        root_certificates=_read(config.tls_ca, "tls_ca") if config.tls_ca else None,
        private_key=_read(config.tls_key, "tls_key") if config.tls_key else None,
        certificate_chain=_read(config.tls_cert, "tls_cert") if config.tls_cert else None,
    )


def _options(config):
    options = list(_OPTIONS)
    if config.tls_server_name:
        options.append(("grpc.ssl_target_name_override", config.tls_server_name))
    return options


def sync_channel(config):
    """A `grpc.Channel` for `config`."""
    if config.tls:
        return grpc.secure_channel(config.target, _credentials(config), _options(config))
    return grpc.insecure_channel(config.target, _options(config))


def aio_channel(config):
    """A `grpc.aio.Channel` for `config` (create it inside the event loop that uses it)."""
    if config.tls:
        return grpc.aio.secure_channel(config.target, _credentials(config), _options(config))
    return grpc.aio.insecure_channel(config.target, _options(config))


def metadata(config):
    """The metadata of every call: the bearer token, if any."""
    if config.token:
        return (("authorization", f"Bearer {config.token}"),)
    return ()
