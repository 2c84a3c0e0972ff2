"""``trueup fakes serve``: the fake provider servers, for trying orgs without accounts.

It serves the same fakes the tests use (`trueup.testing.servers`) and prints
shell exports that point trueup at them. The fake tokens are not secrets.
"""

import shlex
import sys
from pathlib import Path

import click

from trueup.cli.command import group
from trueup.cli.common import PATH

fakes_app = group("fakes", "Fake Cloudflare, Coolify and ZITADEL servers.")


@fakes_app.command("serve")
@click.option("--state-dir", type=PATH, help="Keep the fakes' state in JSON files here.")
@click.option(
    "--port-base",
    type=click.IntRange(0, 65535 - 2),  # ZITADEL listens on N+2
    default=0,
    show_default=True,
    help="Cloudflare on N, Coolify N+1, ZITADEL N+2 (0: any free ports).",
)
@click.option("--zone", multiple=True, help="Seed a Cloudflare zone (repeatable).")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
def serve(state_dir: Path | None, port_base: int, zone: tuple[str, ...], host: str) -> None:
    """Serve all three fakes until Ctrl-C; print `export` lines for TRUEUP_* variables."""
    try:
        from trueup.testing.servers import FakeProviders, _shutdown_signals
    except ModuleNotFoundError as exc:  # the servers are an extra, not the core
        from trueup.cli.output import Output
        from trueup.errors import UsageError

        missing = UsageError(
            f"the fake servers need {exc.name}, which is not installed",
            hint="pip install 'trueup[fakes]'",
        )
        raise click.exceptions.Exit(Output("fakes serve").error(missing)) from None

    fakes = FakeProviders(state_dir=state_dir, host=host, port_base=port_base)
    try:
        fakes.start()
    except OSError as exc:  # an unknown host, a port in use or not ours: the user's to fix
        raise click.BadParameter(
            f"cannot listen on {host} (port base {port_base}): {exc.strerror or exc}",
            param_hint="'--host' / '--port-base'",
        ) from None
    with _shutdown_signals() as wait_for_signal, fakes:
        for name in zone or []:
            fakes.cloudflare.add_zone(name)
        for name, value in fakes.env(account=True).items():
            sys.stdout.write(f"export {name}={shlex.quote(value)}\n")
        for provider in ("cloudflare", "coolify", "zitadel"):
            sys.stdout.write(f"# {provider} control: {fakes.origin(provider)}/_fake\n")
        sys.stdout.write("# serving; stop with Ctrl-C\n")
        sys.stdout.flush()
        wait_for_signal()
