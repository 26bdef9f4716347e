"""What the examples share: the command line, the channel, and a clean stop."""

import argparse
import os
import signal
import sys

import grpc

# The largest reply accepted: the server's --max-message-size default (4 MiB).
MAX_MESSAGE = 4 * 1024 * 1024


def parser(description):
    """--target and --namespace (or DUEQ_TARGET, DUEQ_NAMESPACE), and --count."""
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--target", default=os.environ.get("DUEQ_TARGET", "localhost:50051"))
    p.add_argument("--namespace", default=os.environ.get("DUEQ_NAMESPACE", "shop"))
    p.add_argument("--count", type=int, default=0, help="exit after this many (0: until Ctrl-C)")
    return p


def channel(target):
    return grpc.insecure_channel(target, options=[("grpc.max_receive_message_length", MAX_MESSAGE)])


def run(main):
    """Runs main; Ctrl-C (SIGINT) or a supervisor's SIGTERM stops it cleanly: a line
    on stderr, no traceback, exit status 0. Work claimed and not acked goes back to
    dueq when its lease ends."""
    # Set explicitly: a process started in the background by a shell inherits
    # SIGINT ignored, and SIGTERM would otherwise kill without a word.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    try:
        main()
    except KeyboardInterrupt:
        print(f"{os.path.basename(sys.argv[0])}: stopping", file=sys.stderr, flush=True)
