"""``trueup fakes serve``: the fake providers, with shell exports that point at them."""

from __future__ import annotations

import signal
import subprocess

from world import TRUEUP, World


def test_fakes_serve_prints_exports_and_stops_on_ctrl_c(world: World) -> None:
    server = subprocess.Popen(
        [TRUEUP, "fakes", "serve", "--zone", "acme.test"],
        stdout=subprocess.PIPE,
        text=True,
        env=world.env(),
    )
    try:
        assert server.stdout is not None
        lines = []
        for line in server.stdout:
            lines.append(line)
            if line.startswith("# serving"):
                break
        exported = {line.split("=")[0].removeprefix("export ") for line in lines}
        assert {"TRUEUP_CLOUDFLARE_URL", "TRUEUP_COOLIFY_URL", "TRUEUP_ZITADEL_URL"} <= exported
    finally:
        server.send_signal(signal.SIGINT)
        server.wait(timeout=10)  # stops on Ctrl-C (its exit code depends on when it lands)


def test_without_the_fakes_extra_serve_says_what_to_install(world: World) -> None:
    """starlette and uvicorn are the ``fakes`` extra: the core runs without them."""
    shadow = world.base / "shadow" / "starlette"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text(
        "raise ModuleNotFoundError(\"No module named 'starlette'\", name='starlette')\n"
    )
    env = {"PYTHONPATH": str(shadow.parent)}
    refused = world.run("fakes", "serve", env=env)
    assert refused.code == 2
    assert "starlette" in refused.err and "trueup[fakes]" in refused.err
    assert world.run("status", env=env).code == 0, "everything else works without it"
