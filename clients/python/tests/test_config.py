"""Config: arguments over DUEQ_* variables over defaults; a wrong value is
InvalidArgument naming the field (and the variable it came from)."""

import os
import tempfile
import unittest

import dueq
from dueq import Config


class ConfigFromEnv(unittest.TestCase):
    def test_defaults_without_variables(self):
        c = Config.resolve(environ={})
        self.assertEqual(c.addr, "http://127.0.0.1:50051")
        self.assertEqual(c.target, "127.0.0.1:50051")
        self.assertEqual(c.namespace, "default")
        self.assertIsNone(c.token)
        self.assertFalse(c.tls)
        self.assertEqual(c.timeout, 10.0)
        self.assertEqual(c.max_payload_size, 1024 * 1024)

    def test_every_variable_is_read(self):
        with tempfile.NamedTemporaryFile() as pem:
            env = {
                "DUEQ_ADDR": "https://dueq.example:443",
                "DUEQ_TOKEN": "secret",
                "DUEQ_NAMESPACE": "shop",
                "DUEQ_TLS_CA": pem.name,
                "DUEQ_TLS_CLIENT_CERT": pem.name,
                "DUEQ_TLS_CLIENT_KEY": pem.name,
                "DUEQ_TLS_SERVER_NAME": "internal.example",
            }
            c = Config.resolve(environ=env)
        self.assertEqual(c.target, "dueq.example:443")
        self.assertTrue(c.tls)
        self.assertEqual(c.token, "secret")
        self.assertEqual(c.namespace, "shop")
        self.assertEqual((c.tls_ca, c.tls_cert, c.tls_key), (pem.name,) * 3)
        self.assertEqual(c.tls_server_name, "internal.example")

    def test_an_argument_wins_over_its_variable(self):
        env = {"DUEQ_ADDR": "http://a:1", "DUEQ_NAMESPACE": "env", "DUEQ_TOKEN": "env-token"}
        c = Config.resolve("http://b:2", namespace="arg", token="arg-token", environ=env)
        self.assertEqual((c.target, c.namespace, c.token), ("b:2", "arg", "arg-token"))

    def test_the_process_environment_is_the_default_source(self):
        old = os.environ.get("DUEQ_NAMESPACE")
        os.environ["DUEQ_NAMESPACE"] = "from-process"
        try:
            self.assertEqual(dueq.Client().namespace, "from-process")
        finally:
            if old is None:
                del os.environ["DUEQ_NAMESPACE"]
            else:
                os.environ["DUEQ_NAMESPACE"] = old

    def test_a_ca_alone_implies_tls_on_a_plain_address(self):
        with tempfile.NamedTemporaryFile() as pem:
            c = Config.resolve("127.0.0.1:50051", tls_ca=pem.name, environ={})
        self.assertTrue(c.tls)
        self.assertEqual(c.target, "127.0.0.1:50051")

    def test_the_token_is_not_in_the_repr(self):
        c = Config.resolve(token="very-secret", environ={})
        self.assertNotIn("very-secret", repr(c))


class ConfigErrors(unittest.TestCase):
    def assert_invalid(self, field, **kwargs):
        env = kwargs.pop("environ", {})
        with self.assertRaises(dueq.InvalidArgument) as caught:
            Config.resolve(environ=env, **kwargs)
        self.assertTrue(caught.exception.message.startswith(field), caught.exception.message)
        self.assertEqual(caught.exception.code_number, 3)
        return caught.exception.message

    def test_a_bad_scheme_names_addr(self):
        self.assert_invalid("addr", addr="ftp://host:1")

    def test_a_bad_variable_names_it(self):
        message = self.assert_invalid("addr (DUEQ_ADDR)", environ={"DUEQ_ADDR": "grpc://x:1"})
        self.assertIn("grpc://x:1", message)

    def test_a_missing_ca_file_names_tls_ca(self):
        self.assert_invalid("tls_ca (DUEQ_TLS_CA)", environ={"DUEQ_TLS_CA": "/no/such/ca.pem"})

    def test_a_certificate_without_key_names_tls_key(self):
        with tempfile.NamedTemporaryFile() as pem:
            self.assert_invalid("tls_key", tls_cert=pem.name)

    def test_a_zero_timeout_names_timeout(self):
        self.assert_invalid("timeout", timeout=0)

    def test_a_non_string_names_the_field(self):
        self.assert_invalid("namespace", namespace=7)


if __name__ == "__main__":
    unittest.main()
