"""The ``kubectl-sundial`` executable: the verbs, their help, completion and exit codes."""

from __future__ import annotations

import sys
from typing import Final

import click
from click import shell_completion

from sundial.kubectl_plugin import (
    actions,
    backfilling,
    history_client,
    linting,
    listing,
    next_fires,
    outcome,
    pod_logs,
    versions,
    waiting,
)

__all__ = ["cli", "complete", "main"]

PROG_NAME: Final = "kubectl sundial"
COMPLETE_VAR: Final = "_KUBECTL_SUNDIAL_COMPLETE"


@click.group(
    epilog=outcome.EXIT_CODES_HELP
    + "\n\nShell completion: kubectl sundial completion bash|zsh|fish (kubectl itself completes"
    " `kubectl sundial …` through kubectl_complete-sundial, installed beside this command).",
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
)
def cli() -> None:
    """Sundial from kubectl: list, run, wait for and replay jobs, read their logs and full
    history, preview fire times, lint manifests. Everything goes through the API server with
    your kubeconfig and RBAC; no database DSN is needed."""


for command in (
    listing.get,
    actions.run,
    actions.suspend,
    actions.resume,
    actions.cancel,
    actions.replay,
    waiting.wait,
    pod_logs.logs,
    linting.lint,
    backfilling.backfill,
    history_client.history,
    next_fires.next_fires,
    versions.version,
):
    # The docstrings are reST (``x``) for the code's readers; a terminal shows `x`.
    command.help = (command.help or "").replace("``", "`")
    cli.add_command(command)


@cli.command("completion")
@click.argument("shell", type=click.Choice(["bash", "zsh", "fish"]))
def completion(shell: str) -> None:
    """Print the completion script for SHELL, e.g. ``source <(kubectl sundial completion bash)``
    (it completes the ``kubectl-sundial`` command)."""
    completer = shell_completion.get_completion_class(shell)
    assert completer is not None
    click.echo(completer(cli, {}, "kubectl-sundial", COMPLETE_VAR).source())


def main() -> None:
    try:
        cli.main(prog_name=PROG_NAME, complete_var=COMPLETE_VAR, standalone_mode=False)
    except outcome.PluginError as error:
        click.echo(f"error: {error.message}", err=True)
        sys.exit(error.code)
    except click.exceptions.Exit as done:
        sys.exit(done.exit_code)
    except click.ClickException as error:
        error.show()
        sys.exit(error.exit_code)
    except click.Abort:
        click.echo("Aborted.", err=True)
        sys.exit(1)
    except BrokenPipeError:  # `kubectl sundial get jr | head`
        sys.exit(0)


def complete() -> None:
    """``kubectl_complete-sundial``: kubectl (1.26+) runs it to complete ``kubectl sundial …``,
    with ``__complete`` and the words so far; it prints one candidate per line, then cobra's
    directive (``:4``: do not fall back to file names)."""
    words = sys.argv[1:]
    if words and words[0] == "__complete":
        words = words[1:]
    incomplete = words[-1] if words else ""
    completer = shell_completion.ShellComplete(cli, {}, "kubectl-sundial", COMPLETE_VAR)
    for item in completer.get_completions(words[:-1], incomplete):
        click.echo(item.value)
    click.echo(":4")
