"""``prefkit annotate``: the browser annotation app, served."""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

import click
from prefkit.cli.args import project_option
from prefkit.cli.common import shown
from prefkit.cli.types import PORT
from prefkit.curation.project import Project


@click.group()
def annotate() -> None:
    """The browser annotation app."""


def streamlit_argv(port: int, host: str) -> list[str]:
    # the app script beside the installed package (a wheel puts it in site-packages/prefkit/annotate_app)
    spec = importlib.util.find_spec("prefkit.annotate_app")
    if spec is None or spec.origin is None:
        raise click.ClickException("prefkit.annotate_app is not installed: reinstall prefkit")
    app = Path(spec.origin).resolve().parent / "app.py"
    return [
        # Streamlit's CLI with each script run sent to the browser in one piece (annotate_app/server.py).
        sys.executable,
        "-m",
        "prefkit.annotate_app.server",
        "run",
        str(app),
        "--server.port",
        str(port),
        "--server.address",
        host,
        "--server.headless",
        "true",
        "--server.fileWatcherType",
        "none",
        "--server.runOnSave",
        "false",
        "--browser.gatherUsageStats",
        "false",
        "--global.developmentMode",
        "false",
        "--client.toolbarMode",
        "minimal",
        # Streamlit's default forces a full gc.collect(2) after every script run: measured at ~60 of
        # the ~80 ms of server CPU per submit (bench/bench_browser.py). Python's own generational
        # collector still runs; what a run allocates is freed by reference counting.
        "--runner.postScriptGC",
        "false",
    ]


@annotate.command("serve")
@click.option("--port", type=PORT, default=8501, show_default=True, help="Port to listen on.")
@shown("--host", None, "127.0.0.1", "Address to bind (keep 127.0.0.1 behind a proxy).")
@project_option
def annotate_serve(project: Project, port: int, host: str) -> None:
    """Serve the annotation app for the project (annotators sign in with `prefkit users add` accounts).

    Example: prefkit annotate serve --port 8501 --project my-bench
    """
    if not project.store.accounts.users():
        click.echo("warning: no users yet; add one with `prefkit users add NAME --role maintainer`", err=True)
    click.echo(f"serving {project.name} at http://{host}:{port}", err=True)
    env = {**os.environ, "PREFKIT_PROJECT": str(project.root)}
    project.close()
    argv = streamlit_argv(port, host)
    # Replace this process so the server's pid is the one that was started (signals reach it directly).
    os.execve(argv[0], argv, env)
