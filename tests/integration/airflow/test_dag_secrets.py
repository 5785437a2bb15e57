"""The DAG keeps secrets out of what Airflow renders, stores and shows: no secret in a task's
templated fields (``env_vars`` included) or the serialized DAG; a task's spark-submit still gets
them (from the worker's environment) and Airflow's log masker hides their values."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.integration.airflow.test_lakehouse_dag import REPO, _airflow_env, _airflow_python

SECRETS = {"ICEBERG_CREDENTIAL": "client:cred-s3cr3t-42", "ICEBERG_TOKEN": "tok-s3cr3t-43",
           "AWS_SECRET_ACCESS_KEY": "aws-s3cr3t-44", "AWS_ACCESS_KEY_ID": "AKIA-s3cr3t-45"}

# Parses the DAG as Airflow does, then runs one task's execute() with a stand-in spark-submit
# (LAKEHOUSE_SPARK_SUBMIT) that records the environment it was started with.
PROBE = """
import json, runpy, sys
from airflow.serialization.serialized_objects import DagSerialization
from airflow.sdk.execution_time.secrets_masker import redact
dag = runpy.run_path(sys.argv[1])["dag"]
fields = {t.task_id: {f: repr(getattr(t, f, None)) for f in t.template_fields} for t in dag.tasks}
serialized = json.dumps(DagSerialization.to_dict(dag), default=str)
register = dag.get_task("register")
register.execute(context={})
print(json.dumps({"fields": fields, "serialized": serialized, "env_vars": sorted(register.env_vars),
                  "redacted": redact(" ".join(json.loads(sys.argv[2])))}))
"""


@pytest.mark.integration
def test_secrets_stay_out_of_templated_fields_and_reach_the_job(tmp_path: Path) -> None:
    submit = tmp_path / "spark-submit"
    recorded = tmp_path / "submitted.env"
    submit.write_text(f"#!/bin/sh\nenv > {recorded}\n")
    submit.chmod(0o755)
    env = _airflow_env(tmp_path, {**SECRETS, "LAKEHOUSE_SPARK_SUBMIT": str(submit), "LAKEHOUSE_PY_FILES": ""})
    result = subprocess.run([str(_airflow_python()), "-c", PROBE, str(REPO / "pipelines" / "airflow" / "lakehouse_dag.py"),
                             json.dumps(list(SECRETS.values()))], env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    report = json.loads(next(line for line in result.stdout.splitlines() if line.startswith('{"fields"')))
    shown = json.dumps(report["fields"]) + report["serialized"]
    for name, value in SECRETS.items():
        assert value not in shown, f"{name} is in a templated field or the serialized DAG"
        assert name not in report["env_vars"]
    assert "SPARK_HOME" in report["env_vars"]  # the non-secret pass-through still goes through env_vars
    job_env = dict(line.split("=", 1) for line in recorded.read_text().splitlines() if "=" in line)
    assert {name: job_env.get(name) for name in SECRETS} == SECRETS  # the job still gets every secret
    assert report["redacted"] == " ".join(["***"] * len(SECRETS))  # and the task's log masks them
