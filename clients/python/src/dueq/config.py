"""How a client reaches dueq: address, TLS, token, namespace and timeout, from
arguments or the `DUEQ_*` environment variables the `dueq` CLI reads."""

import dataclasses
import os

from .errors import InvalidArgument

__all__ = ["Config", "DEFAULT_ADDR", "DEFAULT_NAMESPACE", "MAX_PAYLOAD_SIZE"]

DEFAULT_ADDR = "http://127.0.0.1:50051"
DEFAULT_NAMESPACE = "default"
#: The service's default --max-payload-size: larger payloads are refused before sending.
MAX_PAYLOAD_SIZE = 1024 * 1024

_ENV = {
    "addr": "DUEQ_ADDR",
    "token": "DUEQ_TOKEN",
    "namespace": "DUEQ_NAMESPACE",
    "tls_ca": "DUEQ_TLS_CA",
    "tls_cert": "DUEQ_TLS_CLIENT_CERT",
    "tls_key": "DUEQ_TLS_CLIENT_KEY",
    "tls_server_name": "DUEQ_TLS_SERVER_NAME",
}


@dataclasses.dataclass(frozen=True)
class Config:
    """A resolved connection. Build it with `Config.resolve(...)` (arguments, else
    the environment, else the defaults); the clients do that for you.

    - `addr`: `http://host:port` (plaintext), `https://host:port` (TLS) or `host:port`
      (plaintext unless a TLS option is set).
    - `token`: sent as `authorization: Bearer <token>` with every call.
    - `tls_ca`: PEM file of the CA(s) to trust instead of the system's (implies TLS).
    - `tls_cert`/`tls_key`: PEM client certificate and key, for mTLS (both or none).
    - `tls_server_name`: the name the service's certificate is checked against, when
      it is not the host of `addr`.
    - `timeout`: seconds each unary call may take.
    - `max_payload_size`: payloads above it are refused (`InvalidArgument`) before
      anything is sent.
    """

    addr: str = DEFAULT_ADDR
    token: str = None
    namespace: str = DEFAULT_NAMESPACE
    tls_ca: str = None
    tls_cert: str = None
    tls_key: str = None
    tls_server_name: str = None
    timeout: float = 10.0
    max_payload_size: int = MAX_PAYLOAD_SIZE

    @classmethod
    def resolve(cls, addr=None, *, environ=None, timeout=10.0, max_payload_size=MAX_PAYLOAD_SIZE, **given):
        """Each field from its argument, else its `DUEQ_*` variable, else its default.
        Raises `InvalidArgument` naming the field (and variable) that is wrong."""
        environ = os.environ if environ is None else environ
        given["addr"] = addr
        values = {}
        for field, var in _ENV.items():
            value = given.pop(field, None)
            source = field
            if value is None and environ.get(var):
                value, source = environ[var], f"{field} ({var})"
            if value is not None and not isinstance(value, str):
                raise InvalidArgument(f"{source}: must be a string, got {type(value).__name__}")
            if value is not None:
                values[field] = (value, source)
        if given:
            raise TypeError(f"unexpected arguments: {', '.join(sorted(given))}")
        config = cls(
            timeout=timeout,
            max_payload_size=max_payload_size,
            **{k: v for k, (v, _) in values.items()},
        )
        config._check({k: s for k, (_, s) in values.items()})
        return config

    def _check(self, sources):
        def name(field):
            return sources.get(field, field)

        _target(self.addr, name("addr"))
        if not self.namespace:
            raise InvalidArgument(f"{name('namespace')}: must not be empty")
        if (self.tls_cert is None) != (self.tls_key is None):
            missing = "tls_key" if self.tls_key is None else "tls_cert"
            raise InvalidArgument(f"{name(missing)}: tls_cert and tls_key go together (mTLS)")
        for field in ("tls_ca", "tls_cert", "tls_key"):
            path = getattr(self, field)
            if path is not None and not os.path.isfile(path):
                raise InvalidArgument(f"{name(field)}: no such file: {path}")
        if not self.timeout or self.timeout <= 0:
            raise InvalidArgument(f"timeout: must be positive, got {self.timeout!r}")

    @property
    def tls(self):
        """Whether the connection uses TLS: an https:// address or any TLS option."""
        return (
            self.addr.startswith("https://")
            or self.tls_ca is not None
            or self.tls_cert is not None
            or self.tls_server_name is not None
        )

    @property
    def target(self):
        """`host:port` for grpc, from `addr`."""
        return _target(self.addr, "addr")

    def __repr__(self):  # the token is a secret
        token = None if self.token is None else "<redacted>"
        return (
            f"Config(addr={self.addr!r}, namespace={self.namespace!r}, token={token}, "
            f"tls={self.tls}, tls_ca={self.tls_ca!r}, tls_cert={self.tls_cert!r}, "
            f"tls_server_name={self.tls_server_name!r}, timeout={self.timeout!r})"
        )


def _target(addr, field):
    """`host:port` of an http://, https:// or bare address; InvalidArgument naming `field`."""
    rest = addr
    for scheme in ("http://", "https://"):
        if rest.startswith(scheme):
            rest = rest[len(scheme) :]
            break
    rest = rest.rstrip("/")
    if not rest or "/" in rest or "://" in rest:
        raise InvalidArgument(f"{field}: {addr!r} is not http://host:port or https://host:port")
    return rest
