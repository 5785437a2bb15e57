"""``stream-edge``: run a user's pipeline as a service, or check it without connecting.

    stream-edge run mypkg.pipeline:build [--config edge.toml] [--set commit_interval=2] [--metrics-port 9108]
    stream-edge run path/to/app.py                # a Quix-style script that calls app.run() itself
    stream-edge check mypkg.pipeline:build        # settings valid, pipeline importable: exit 0

``module:function`` receives an Application configured from the settings (environment < config
file < flags, see ``stream_edge.service.settings``) and defines its dataframes and sinks; the
command then runs it until SIGTERM/SIGINT (a final checkpoint is committed). A script's own
Application takes the broker, consumer group and state directory from the settings where it
passes none (the command installs them as ``ProcessHooks``; the environment is left alone); its
guarantee, dead-letter topic, commit interval and offset reset are the script's own: given as
flags or in the config file they are an error. With
``--metrics-port`` the process serves ``/metrics`` (Prometheus), ``/healthz`` and ``/readyz``.

Exit codes: 0 done (or checked), 2 bad settings or pipeline (the message names the setting and
its source), 1 the pipeline failed while running.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import runpy
import sys
from typing import Any, Callable, Dict, List, Optional

from stream_edge.processing.observer import PipelineDefined, ProcessHooks, RunObserver, installed_hooks

from stream_edge.logging import configure_logging

from .settings import ServiceSettings, SettingsError

__all__ = ("main",)

logger = logging.getLogger("stream_edge.service")


class PipelineError(ValueError):
    """The pipeline target cannot be loaded."""


def _parse_sets(items: List[str]) -> Dict[str, str]:
    flags: Dict[str, str] = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name:
            raise SettingsError(f"--set expects name=value, got {item!r}")
        flags[name.strip()] = value.strip()
    return flags


def _load_function(target: str) -> Callable[[Any], Any]:
    module_name, _, attr = target.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise PipelineError(f"pipeline {target!r}: cannot import module {module_name!r}: {exc}") from exc
    func = getattr(module, attr, None)
    if not callable(func):
        raise PipelineError(f"pipeline {target!r}: {module_name} has no function {attr!r}")
    return func


def _describe(app: Any) -> str:
    outline = app.outline()
    return f"input topics {list(outline.input_topics)}, sinks {list(outline.sinks) or 'none'}"


def _define(target: str, settings: ServiceSettings) -> Optional[Any]:
    """Build the Application for ``module:function`` (None for a script, which builds its own)."""
    if target.endswith(".py"):
        return None
    if ":" not in target:
        raise PipelineError(f"pipeline {target!r}: give module:function (e.g. mypkg.pipeline:build) or a .py script")
    func = _load_function(target)
    from stream_edge import Application

    app = Application(**settings.application_kwargs())
    func(app)
    if app.outline().empty:
        raise PipelineError(f"pipeline {target!r} defined no dataframe and no source")
    return app


def _run_script(path: str) -> Any:
    if not os.path.exists(path):
        raise PipelineError(f"pipeline script {path} does not exist")
    sys.path.insert(0, os.path.dirname(os.path.abspath(path)))
    return runpy.run_path(path, run_name="__main__")


def _refuse_what_a_script_decides(target: str, settings: ServiceSettings) -> None:
    """A script builds its own Application, whose arguments decide its guarantee, dead-letter
    topic, commit interval and offset reset: the command cannot apply those settings to it. Given
    on the command line or in the config file they are an error (never silently ignored); from the
    environment, which may be there for the script to read itself, a warning."""
    if not target.endswith(".py"):
        return
    for name, source in settings.not_applied_to_a_script():
        why = (f"{source} sets {name}, which a script target does not apply: {target} builds its own "
               f"Application, whose arguments decide {name} (pass {name}=... to Application(...) in the "
               "script, or run a module:function pipeline, which receives an Application built from "
               "these settings)")
        if source.startswith("environment"):
            logger.warning("%s; ignored", why)
        else:
            raise SettingsError(why)


def _check(target: str, settings: ServiceSettings) -> str:
    with installed_hooks(ProcessHooks(check_only=True, application_defaults=settings.script_defaults())):
        app = _define(target, settings)
        if app is None:
            try:
                _run_script(target)
            except PipelineDefined as defined:
                app = defined.app
            else:
                raise PipelineError(f"pipeline script {target} finished without calling app.run()")
        return _describe(app)


def _serve(target: str, settings: ServiceSettings) -> None:
    server = None
    observers: List[RunObserver] = []
    if settings.log_summary_interval:
        from .summary import RunSummaryLog

        observers.append(RunSummaryLog(settings.log_summary_interval))
    if settings.metrics_port:
        from .http import MetricsServer
        from .metrics import EdgeMetrics

        metrics = EdgeMetrics(commit_interval=settings.commit_interval, state_dir=settings.state_dir,
                              ready_stall_seconds=settings.ready_stall_seconds,
                              ready_paused_seconds=settings.ready_paused_seconds,
                              live_stall_seconds=settings.live_stall_seconds)
        observers.append(metrics)
        server = MetricsServer(metrics, settings.metrics_port, host=settings.metrics_host).start()
        logger.info("metrics on http://%s:%d/metrics (health: /healthz, /readyz)", server.host, server.port)
    hooks = ProcessHooks(observers=tuple(observers), application_defaults=settings.script_defaults())
    try:
        with installed_hooks(hooks):
            app = _define(target, settings)
            if app is None:
                _run_script(target)
            else:
                logger.info("running %s: %s", target, _describe(app))
                app.run()
    finally:
        if server is not None:
            server.stop()


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(
        prog="stream-edge", description="Run a stream_edge pipeline as a service, or check it without connecting.",
        epilog="Settings: environment < --config file < --set flags; see docs/service.md.")
    sub = parser.add_subparsers(dest="command", required=True)
    for name, text in (("run", "run the pipeline until SIGTERM/SIGINT"),
                       ("check", "validate the settings and define the pipeline without connecting")):
        cmd = sub.add_parser(name, help=text)
        cmd.add_argument("target", help="module:function receiving the Application, or path/to/app.py")
        cmd.add_argument("--config", help="TOML config file (overrides the environment)")
        cmd.add_argument("--set", action="append", default=[], metavar="NAME=VALUE",
                         help="a setting (overrides the config file), e.g. --set commit_interval=2")
        cmd.add_argument("--metrics-port", type=str, help="serve /metrics, /healthz, /readyz on this port")
        cmd.add_argument("--metrics-host", type=str,
                         help="interface the metrics server binds (default 127.0.0.1; 0.0.0.0: all)")
        cmd.add_argument("--dead-letter-topic", type=str,
                         help="send records failing deserialization, processing or a sink to this topic")
    args = parser.parse_args(argv)
    try:
        flags = _parse_sets(args.set)
        for name in ("metrics_port", "metrics_host", "dead_letter_topic"):
            if getattr(args, name) is not None:
                flags[name] = getattr(args, name)
        settings = ServiceSettings.resolve(os.environ, args.config, flags)
        configure_logging(getattr(logging, settings.log_level), name="stream_edge", log_format=settings.log_format)
        _refuse_what_a_script_decides(args.target, settings)
        if args.command == "check":
            print(f"stream-edge check: ok ({_check(args.target, settings)}; broker {settings.broker_address} "
                  f"from {settings.source('broker_address')})")
            return 0
        _serve(args.target, settings)
    except (SettingsError, PipelineError) as exc:
        print(f"stream-edge {args.command}: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 0
    except Exception:  # noqa: BLE001 - the pipeline failed: the traceback says where
        logger.exception("stream-edge %s: the pipeline failed", args.command)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
