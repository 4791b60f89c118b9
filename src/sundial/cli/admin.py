"""Commands for setting Sundial up and trying a handler: ``crds``, ``migrate``, ``exec``."""

from __future__ import annotations

import os
import pathlib
from collections.abc import Mapping

import click

from sundial.api import crd
from sundial.cli.app import main
from sundial.cli.options import dsn_option, is_namespace_name


@main.command()
@click.option(
    "--output",
    "output",
    type=click.Path(file_okay=False, writable=True, path_type=pathlib.Path),
    default=None,
    help="Write one <plural>.sundial.dev.yaml per kind into this directory instead of stdout.",
)
def crds(output: pathlib.Path | None) -> None:
    """Print (or write) the CustomResourceDefinitions generated from sundial.api."""
    if output is None:
        click.echo("---\n".join(crd.render(resource) for resource in crd.RESOURCES), nl=False)
        return
    output.mkdir(parents=True, exist_ok=True)
    for resource in crd.RESOURCES:
        path = output / crd.file_name(resource)
        path.write_text(crd.render(resource), encoding="utf-8")
        click.echo(f"wrote {path}")


@main.command("exec")
@click.argument("handler")
@click.option(
    "--handlers",
    "handler_modules",
    multiple=True,
    required=True,
    envvar="SUNDIAL_HANDLERS",
    help="Module that registers handlers with @sundial.job (repeatable; or SUNDIAL_HANDLERS, "
    "space-separated, as the runner image sets it).",
)
@click.option(
    "--args-file",
    type=click.Path(dir_okay=False),
    default=None,
    help="JSON object of arguments; defaults to the SUNDIAL_ARGS environment variable.",
)
@click.option(
    "--log-level",
    default="INFO",
    show_default=True,
    envvar="SUNDIAL_LOG_LEVEL",
    type=click.Choice(["DEBUG", "INFO", "WARNING", "ERROR"], case_sensitive=False),
    help="Level of the handler's ctx.logger lines (or SUNDIAL_LOG_LEVEL).",
)
def exec_(
    handler: str, handler_modules: tuple[str, ...], args_file: str | None, log_level: str
) -> None:
    """Run one registered HANDLER in the foreground; the exit code is the outcome.

    0 succeeded, 1 the handler raised, 3 bad arguments, 4 unknown handler, 5 a handlers
    module failed to import, 6 bad SUNDIAL_* environment, 143 cancelled by SIGTERM.

    Log records (the handler's ctx.logger among them) go to stdout as JSON lines with the
    keys of every Sundial process; stderr carries only the reason of a failure, which the
    subprocess executor keeps as the run's error.
    """
    import os
    import sys

    from sundial.observability import json_logs as json_logging
    from sundial.runner import exec_command

    json_logging.configure(log_level.upper(), stream=sys.stdout)

    try:
        args_text = exec_command.read_args(args_file, os.environ)
    except OSError as error:
        click.echo(f"cannot read --args-file: {error}", err=True)
        sys.exit(exec_command.EXIT_BAD_ARGS)
    sys.exit(exec_command.run(handler, handler_modules, args_text=args_text, environ=os.environ))


@main.command()
@dsn_option
@click.option("--target", type=int, default=None, help="Stop after this migration version.")
@click.option(
    "--roles/--no-roles",
    default=True,
    show_default=True,
    help="Make the database roles of the components (operator, runner, reader) and their grants.",
)
@click.option(
    "--role-prefix",
    default="sundial",
    show_default=True,
    help="Prefix of the roles' names (PREFIX_operator, ...): roles are shared by a server's"
    " databases, so two installations on one server need two prefixes.",
)
@click.option(
    "--login",
    "logins",
    multiple=True,
    metavar="COMPONENT=NAME",
    help="Make NAME a login with COMPONENT's grants (operator, runner or reader), its password"
    " read from SUNDIAL_LOGIN_PASSWORD_<COMPONENT>. Repeatable.",
)
@click.option(
    "--login-namespaces",
    "kept",
    multiple=True,
    metavar="LOGIN=NS[,NS...]",
    help="Keep LOGIN (a runner's, typically) to the runs of these namespaces: PostgreSQL shows"
    " and lets it change no other run, whatever its handler code does. LOGIN=* lifts it."
    " Repeatable.",
)
@click.option(
    "--hot-queue",
    type=click.Choice(["on", "off"]),
    default=None,
    help="Turn the Redis hot queue on for this database (every run pending now, and every run"
    " that becomes pending from now on, is handed to Redis by the runners' relays) or off"
    " (PostgreSQL's claim serves the pending runs again). Runners must be restarted with"
    " --hot-queue-url given (on) or not (off). Left as it is when not given.",
)
def migrate(
    dsn: str,
    target: int | None,
    roles: bool,
    role_prefix: str,
    logins: tuple[str, ...],
    kept: tuple[str, ...],
    hot_queue: str | None,
) -> None:
    """Apply the database migrations that are not applied yet (safe to run concurrently),
    then make the components' database roles."""
    from sundial.store import errors as store_errors
    from sundial.store import migrate as store_migrate
    from sundial.store import roles as store_roles

    wanted = _logins(logins, os.environ)
    kept_to = _kept_to_namespaces(kept)
    try:
        applied = store_migrate.migrate(
            dsn,
            target=target,
            grant_roles=roles,
            role_prefix=role_prefix,
            logins=wanted,
            kept_to_namespaces=kept_to,
        )
    except store_roles.RolesNotCreatedError as error:
        if wanted:
            raise click.ClickException(str(error)) from error
        click.echo(f"warning: {error}", err=True)
        applied = error.applied
    except (store_errors.StoreError, ValueError) as error:
        # ValueError: a login named as a group role (roles.create_login, keep_to_namespaces).
        raise click.ClickException(str(error)) from error
    for migration in applied:
        click.echo(f"applied {migration.version:04d}_{migration.name}")
    if not applied:
        click.echo("schema is up to date")
    if hot_queue is not None:
        from sundial.store.hot_queue import outbox

        try:
            changed = outbox.switch(dsn, on=hot_queue == "on")
        except store_errors.StoreError as error:
            raise click.ClickException(
                f"could not turn the hot queue {hot_queue}: {error}"
            ) from error
        click.echo(f"hot queue is {hot_queue}" + ("" if changed else " (unchanged)"))
    for component, (login, _) in wanted.items():
        click.echo(f"login {login} has the {component} grants")
    for login, namespaces in kept_to.items():
        if namespaces is None:
            click.echo(f"login {login} is kept to no namespace: it sees every namespace's runs")
        else:
            click.echo(f"login {login} sees and changes only the runs of {', '.join(namespaces)}")


def _kept_to_namespaces(values: tuple[str, ...]) -> dict[str, tuple[str, ...] | None]:
    """``--login-namespaces LOGIN=NS,...`` values as login -> namespaces (``None`` for ``*``)."""
    kept: dict[str, tuple[str, ...] | None] = {}
    for value in values:
        login, separator, listed = value.partition("=")
        login = login.strip()
        if not separator or not login:
            raise click.BadParameter(
                f"{value!r}: write LOGIN=NAMESPACE[,NAMESPACE...], e.g. runner-team-a=team-a,"
                " or LOGIN=* to lift it",
                param_hint="--login-namespaces",
            )
        if login in kept:
            raise click.BadParameter(
                f"{login!r} is named twice: give each login once, with all its namespaces",
                param_hint="--login-namespaces",
            )
        if listed.strip() == "*":
            kept[login] = None
            continue
        names = tuple(sorted({n.strip() for n in listed.split(",") if n.strip()}))
        wrong = [n for n in names if not is_namespace_name(n)]
        if not names:
            raise click.BadParameter(
                f"{value!r} lists no namespace: name at least one (comma-separated), or write"
                f" {login}=* to lift it",
                param_hint="--login-namespaces",
            )
        if wrong:
            raise click.BadParameter(
                f"{value!r}: {', '.join(map(repr, wrong))} is not a namespace name (1 to 63"
                " lowercase letters, digits and '-', starting and ending with a letter or digit)",
                param_hint="--login-namespaces",
            )
        kept[login] = names
    return kept


def _logins(values: tuple[str, ...], environ: Mapping[str, str]) -> dict[str, tuple[str, str]]:
    """``--login COMPONENT=NAME`` values as component -> (login, password from the environment)."""
    from sundial.store import roles as store_roles

    wanted: dict[str, tuple[str, str]] = {}
    for value in values:
        component, separator, login = value.partition("=")
        if not separator or not login or component not in store_roles.COMPONENTS:
            known = ", ".join(store_roles.COMPONENTS)
            raise click.BadParameter(
                f"{value!r}: write COMPONENT=NAME, COMPONENT one of {known}", param_hint="--login"
            )
        variable = f"SUNDIAL_LOGIN_PASSWORD_{component.upper()}"
        password = environ.get(variable, "")
        if not password:
            raise click.BadParameter(
                f"{value!r}: set the login's password in {variable}", param_hint="--login"
            )
        wanted[component] = (login, password)
    return wanted
