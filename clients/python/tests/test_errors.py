"""Every gRPC code has its DueqError subclass, named after the code in CamelCase."""

import unittest

import grpc

import dueq
from dueq.errors import from_code, from_rpc_error


def camel(code):
    return "".join(part.capitalize() for part in code.name.split("_"))


class FakeRpcError(grpc.RpcError):
    def __init__(self, code, details):
        self._code, self._details = code, details

    def code(self):
        return self._code

    def details(self):
        return self._details


class ErrorMapping(unittest.TestCase):
    def test_every_code_but_ok_has_its_class(self):
        for code in grpc.StatusCode:
            if code is grpc.StatusCode.OK:
                continue
            with self.subTest(code=code):
                err = from_code(code, "m")
                self.assertEqual(type(err).__name__, camel(code))
                self.assertIs(getattr(dueq, camel(code)), type(err))
                self.assertIsInstance(err, dueq.DueqError)
                self.assertEqual(err.code, code)
                self.assertEqual(err.code_number, code.value[0])
                self.assertEqual(err.message, "m")

    def test_numbers_map_as_codes_do(self):
        self.assertIsInstance(from_code(7, "no"), dueq.PermissionDenied)
        self.assertIsInstance(from_code(16, "no"), dueq.Unauthenticated)
        self.assertIsInstance(from_code(999, "?"), dueq.Unknown)

    def test_an_rpc_error_keeps_code_and_message(self):
        err = from_rpc_error(FakeRpcError(grpc.StatusCode.NOT_FOUND, "no job j"))
        self.assertIsInstance(err, dueq.NotFound)
        self.assertEqual(err.message, "no job j")
        self.assertEqual(str(err), "NOT_FOUND: no job j")

    def test_a_subclass_made_directly_has_its_code(self):
        self.assertEqual(dueq.Unavailable("down").code_number, 14)

    def test_non_retryable_is_not_a_call_error(self):
        self.assertFalse(issubclass(dueq.NonRetryable, dueq.DueqError))


if __name__ == "__main__":
    unittest.main()
