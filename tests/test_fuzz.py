"""Property-based fuzzing of every endpoint in /openapi.json with schemathesis (inputs the schema allows,
and inputs it does not) against a real server on loopback: no response may be a 5xx, and every error
is in the OpenAI format.

Bounded to fit CI (a few examples per operation and mode, derandomized so a run is repeatable). The
import parsers are fuzzed with hypothesis in tests/test_importers.py. schemathesis' own pytest plugin
is not used (it does not run on this pytest); its strategies are driven by hypothesis here.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis import GenerationMode, openapi

from memsched.config import Config
from memsched.server.app import create_app
from memsched.testing import FakeOpenAI, LiveServer

EXAMPLES = 10


def _check(case: Any, failures: list[str], seen: list[int]) -> None:
    response = case.call(timeout=30)
    seen.append(response.status_code)
    where = f"{case.method} {case.formatted_path} {str(case.body)[:120]!r}"
    if response.status_code >= 500:
        failures.append(f"{where}: {response.status_code} {response.text[:200]}")
    elif response.status_code >= 400 and "error" not in response.json():
        failures.append(f"{where}: {response.status_code} not in the OpenAI error format")


def test_no_endpoint_answers_5xx(tmp_path: Path) -> None:
    with FakeOpenAI() as fake:
        cfg = Config.load(
            home=tmp_path,
            embedders="hash",
            upstream_base_url=fake.base_url,
            upstream_model="fake-model",
            llm_timeout=5.0,
            max_body_bytes=100_000,
            max_message_tokens=2000,
        )
        with LiveServer(create_app(cfg)) as base:
            schema = openapi.from_url(f"{base}/openapi.json")
            operations = [result.ok() for result in schema.get_all_operations()]
            assert len(operations) >= 10
            failures: list[str] = []
            ran = 0
            seen: list[int] = []
            for operation in operations:
                for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):

                    @settings(
                        max_examples=EXAMPLES,
                        deadline=None,
                        derandomize=True,
                        database=None,
                        suppress_health_check=list(HealthCheck),
                    )
                    @given(case=operation.as_strategy(generation_mode=mode))
                    def run(case: Any) -> None:
                        _check(case, failures, seen)

                    try:
                        run()
                        ran += 1
                    except Unsatisfiable:  # nothing invalid to send (an operation without inputs)
                        assert mode is GenerationMode.NEGATIVE, operation.label
    assert ran > len(operations), ran
    # Both kinds of answer were exercised: accepted requests and refused ones.
    assert any(c < 300 for c in seen) and any(400 <= c < 500 for c in seen), sorted(set(seen))
    assert failures == [], "\n".join(failures[:20])
