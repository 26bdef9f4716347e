"""What the job worker and the schedule worker share: the async client they work
through, signal handling, backoff, and running a sync or async handler."""

import asyncio
import concurrent.futures
import inspect
import logging
import os
import random
import signal
import socket
import threading

import grpc

from .client import AsyncClient, Client
from .errors import InvalidArgument

log = logging.getLogger("dueq")

#: Stream or call errors worth reconnecting after: the service restarted, failed
#: over, is overloaded, or the connection broke. Anything else (bad arguments, no
#: permission, no token) ends `run()` with the typed error.
TRANSIENT = frozenset(
    {
        grpc.StatusCode.UNAVAILABLE,
        grpc.StatusCode.DEADLINE_EXCEEDED,
        grpc.StatusCode.INTERNAL,
        grpc.StatusCode.UNKNOWN,
        grpc.StatusCode.CANCELLED,
        grpc.StatusCode.RESOURCE_EXHAUSTED,
        grpc.StatusCode.ABORTED,
    }
)


def default_worker_id(kind):
    return f"{kind}-{socket.gethostname()}-{os.getpid()}"


def async_client(client):
    """(an `AsyncClient` for the running loop, whether the worker owns it)."""
    if isinstance(client, AsyncClient):
        return client, False
    if isinstance(client, Client):
        return AsyncClient(config=client.config), True
    raise InvalidArgument(f"client: must be a dueq.Client or dueq.AsyncClient, got {type(client).__name__}")


def is_async_callable(fn):
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(getattr(fn, "__call__", None))


def check_concurrency(concurrency, most=1000):
    if isinstance(concurrency, bool) or not isinstance(concurrency, int) or not 1 <= concurrency <= most:
        raise InvalidArgument(f"concurrency: must be an integer 1-{most}, got {concurrency!r}")


def check_seconds(value, field, optional=True):
    if value is None and optional:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
        raise InvalidArgument(f"{field}: must be a positive number of seconds, got {value!r}")
    return float(value)


class Backoff:
    """Exponential, capped, fully jittered waits between reconnects."""

    def __init__(self, first=0.1, cap=5.0):
        self.first, self.cap, self.attempt = first, cap, 0
        #: When the current wait ends (monotonic), for callers that do not sleep.
        self.until = None

    def reset(self):
        self.attempt = 0

    def next(self):
        ceiling = min(self.cap, self.first * (2**self.attempt))
        self.attempt = min(self.attempt + 1, 30)
        return random.uniform(ceiling / 2, ceiling)


class Runner:
    """Runs a handler: awaited when it is a coroutine function, else in a thread
    pool of `concurrency` threads (so a blocking handler does not stall the loop)."""

    def __init__(self, handler, concurrency):
        if not callable(handler):
            raise InvalidArgument(f"handler: must be callable, got {type(handler).__name__}")
        self.handler = handler
        self.is_async = is_async_callable(handler)
        self.concurrency = concurrency
        self.pool = None

    def call(self, arg):
        """An awaitable of the handler's result."""
        if self.is_async:
            return self.handler(arg)
        if self.pool is None:
            self.pool = concurrent.futures.ThreadPoolExecutor(self.concurrency, thread_name_prefix="dueq-handler")
        return asyncio.get_running_loop().run_in_executor(self.pool, self.handler, arg)

    def close(self):
        if self.pool is not None:
            self.pool.shutdown(wait=False)
            self.pool = None


class Signals:
    """SIGINT/SIGTERM call `on_signal` while installed (main thread only); `remove()`
    puts the handlers that were there before back."""

    def __init__(self, loop, on_signal):
        self.loop, self.installed = loop, []
        if threading.current_thread() is not threading.main_thread():
            return
        for sig in (signal.SIGINT, signal.SIGTERM):
            try:
                previous = signal.getsignal(sig)
                loop.add_signal_handler(sig, on_signal)
                self.installed.append((sig, previous))
            except (NotImplementedError, RuntimeError, ValueError):
                pass

    def remove(self):
        for sig, previous in self.installed:
            self.loop.remove_signal_handler(sig)
            if previous is not None:
                signal.signal(sig, previous)
        self.installed = []


class CancelSignal:
    """Set when the job's cancel is requested (or its lease is lost). Test it with
    `is_set()` (or truth), wait with `await wait()` in async handlers or
    `wait_blocking(timeout)` in threads."""

    __slots__ = ("_set", "_event", "_thread_event")

    def __init__(self):
        self._set = False
        self._event = None
        self._thread_event = None

    def is_set(self):
        return self._set

    def __bool__(self):
        return self._set

    async def wait(self):
        if self._set:
            return
        if self._event is None:
            self._event = asyncio.Event()
        await self._event.wait()

    def wait_blocking(self, timeout=None):
        """Blocks (in a handler thread) until set or `timeout`; returns is_set()."""
        with _LOCK:
            if self._thread_event is None:
                self._thread_event = threading.Event()
                if self._set:
                    self._thread_event.set()
        return self._thread_event.wait(timeout)

    def _fire(self):
        if self._set:
            return
        with _LOCK:
            self._set = True
            if self._thread_event is not None:
                self._thread_event.set()
        if self._event is not None:
            self._event.set()


_LOCK = threading.Lock()
