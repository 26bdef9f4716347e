"""dueq's API, version 1: the modules generated from proto/dueq/v1 by grpcio-tools
(`scripts/generate.py`). `jobs_pb2` holds the job messages, `queue_pb2` the schedule
messages and `queue_pb2_grpc.QueueServiceStub` every RPC."""
