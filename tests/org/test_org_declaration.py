"""Org files: the example loads; mistakes name the file, the section or item, and the field."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from trueup.declare.org import load_org
from trueup.errors import UsageError

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "org" / "acme.toml"
TRUEUP = shutil.which("trueup", path=str(Path(sys.executable).parent)) or "trueup"
HEAD = '[org]\nid = "acme"\nname = "Acme Inc"\ndomain = "acme.test"\n'


def test_the_example_org_declares_every_provider() -> None:
    org = load_org(EXAMPLE)
    assert (org.id, org.name, org.domain) == ("acme", "Acme Inc", "acme.test")
    assert org.providers == {"cloudflare", "coolify", "zitadel"}
    ids = {r.id for r in org.resources}
    assert {
        "identity.org",
        "identity.app:portal/portal-cli",
        "dns:portal.acme.test/A",
        "dns:acme.test/TXT",
        "mail.routing",
        "mail.route:security@acme.test",
        "mail.destination:oncall@example.com",
        "mail.catch-all",
        "apps.environment:staging",
        "apps.app:site",
        "chat.app",
        "chat.signing-key",
    } <= ids
    site = next(r for r in org.resources if r.id == "apps.app:site")
    assert site.depends_on == ("apps.environment:staging",)
    assert site.spec["source"] == "public"


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("", "missing section [org]"),
        (
            '[mail]\nlevel = "forward"\nroutes = [{ address = "hi@acme.test", '
            'forward_to = ["b@example.com", "a@example.com"] }]\n',
            "[mail] route 'hi@acme.test': field 'forward_to': Cloudflare Email Routing forwards "
            "an address to one destination, not 2 (a@example.com, b@example.com); forward to "
            "one address (a list that fans out, for example)",
        ),
        (
            '[mail]\nlevel = "forward"\n'
            'catch_all = { action = "forward", forward_to = ["a@example.com", "b@example.com"] }\n',
            "[mail] catch_all: field 'forward_to': Cloudflare Email Routing forwards an address "
            "to one destination, not 2 (a@example.com, b@example.com); forward to one address "
            "(a list that fans out, for example)",
        ),
        (
            '[[dns]]\ntype = "A"\nname = "portal"\ncontent = "not-an-ip"\n',
            "[[dns]] #1 (A portal): content of an A record must be an IPv4 address",
        ),
        (
            '[[dns]]\ntype = "A"\nname = "x.other.test."\ncontent = "192.0.2.1"\n',
            "[[dns]] #1 (A x.other.test.): field 'name': 'x.other.test.' is outside acme.test",
        ),
        (
            '[[dns]]\ntype = "A"\nname = "foo bar"\ncontent = "192.0.2.1"\n',
            "[[dns]] #1 (A foo bar): name 'foo bar' is not a DNS name: dot-separated labels of "
            "letters, digits, '-' and '_' (up to 63 each, not starting or ending with '-'), "
            "'*' as a whole label, or '@' for the apex",
        ),
        (
            '[[dns]]\ntype = "MX"\nname = "@"\ncontent = "mx.example.com"\n',
            "[[dns]] #1 (MX @): a MX record needs a priority",
        ),
        (
            '[[app]]\nname = "portal"\nimagee = "x"\n',
            "[[app]] #1 ('portal'): unknown field 'imagee'",
        ),
        (
            '[[app]]\nname = "portal"\nimage = "x"\nenvironment = "qa"\n',
            "[[app]] 'portal': field 'environment': 'qa' is not in [apps] environments",
        ),
        (
            '[mail]\nlevel = "none"\nroutes = [{ address = "a@acme.test", forward_to = ["b@c.test"] }]\n',
            "[mail]: routes, catch_all and destinations need level = 'forward'",
        ),
        (
            '[mail]\nlevel = "forward"\nroutes = [{ address = "a@other.test", forward_to = ["b@c.test"] }]\n',
            "[mail] route 'a@other.test': field 'address': not an address of acme.test",
        ),
        (
            '[mail]\nlevel = "forward"\nroutes = [{ address = "a@acme.test", forward_to = ["nope"] }]\n',
            "[[mail.routes]] #1 ('a@acme.test'): field 'forward_to': not an email address: 'nope'",
        ),
        (
            '[[identity.project]]\nname = "p"\nroles = ["a"]\ngrants = [{ org = "O", roles = ["b"] }]\n',
            "[[identity.project]] 'p': grant to 'O': field 'roles': 'b' is not a role of this project",
        ),
        (
            '[[identity.project]]\nname = "p"\napps = [{ name = "w", redirect_uris = ["ftp://x"] }]\n',
            "[[identity.project]] #1 ('p') [[identity.project.apps]] #1 ('w'): field "
            "'redirect_uris': not an http(s) URL: 'ftp://x'",
        ),
        (
            '[[dns]]\ntype = "A"\nname = "portal"\ncontent = "192.0.2.1"\nproxied = "yes"\n',
            "[[dns]] #1 (A portal): field 'proxied': Input should be a valid boolean",
        ),
        (
            '[chat]\nimage = "c:1"\nkey_generation = 0\n',
            "[chat]: field 'key_generation': Input should be greater than or equal to 1",
        ),
    ],
)
def test_mistakes_name_the_file_the_item_and_the_field(
    tmp_path: Path, body: str, expected: str
) -> None:
    path = tmp_path / "acme.toml"
    path.write_text(body if body == "" else HEAD + body)
    with pytest.raises(UsageError) as refused:
        load_org(path)
    assert refused.value.message == f"{path}: {expected}"


def test_the_command_exits_2_and_the_schema_describes_every_section(tmp_path: Path) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(HEAD + '[mail]\nlevel = "sometimes"\n')
    done = subprocess.run(
        [TRUEUP, "org", "plan", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
        env={"TRUEUP_DATA": str(tmp_path / "data"), "PATH": "/usr/bin:/bin"},
    )
    assert done.returncode == 2
    assert f"{path}: [mail]: field 'level'" in done.stderr
    schema = subprocess.run(
        [TRUEUP, "schema", "org"], capture_output=True, text=True, timeout=60, check=True
    )
    document = json.loads(schema.stdout)
    assert document["title"] == "trueup org"
    assert set(document["properties"]) == {"org", "identity", "dns", "mail", "apps", "app", "chat"}
    assert document["required"] == ["org"]
