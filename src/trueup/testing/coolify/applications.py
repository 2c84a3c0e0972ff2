"""Coolify applications, their lifecycle actions and ``/deploy``.

Quirks kept on purpose: unknown body fields are a 422; ``domains`` goes in
and comes back as ``fqdn``; a domain another application already uses is a
409 unless ``force_domain_override`` is true; ``GET /applications/{uuid}``
does not say which project, server or environment the app lives in; a
Docker-image app reports ``git_repository: coollabsio/coolify``.
Environment variables live in `trueup.testing.coolify.envvars`.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from trueup.testing._util import FakeHTTPError, cuid, laravel_time
from trueup.testing.coolify.base import CoolifyStore, laravel_bool, not_found, public_fields
from trueup.testing.coolify.validation import validate
from trueup.testing.store import JSON

NEED_ENVIRONMENT = "You need to provide at least one of environment_name or environment_uuid."
DOMAIN_CONFLICT = "Domain conflicts detected. Use force_domain_override=true to proceed."
BUILD_PACKS = "nixpacks,static,dockerfile,dockercompose"
PORTS = r"\d+(,\d+)*"

#: Fields the create and update endpoints accept besides the per-kind ones.
SHARED_RULES: dict[str, str] = {
    "name": "string|max:255",
    "description": "string|nullable",
    "domains": "string|nullable",
    "git_commit_sha": "string",
    "docker_registry_image_name": "string|nullable",
    "docker_registry_image_tag": "string|nullable",
    "install_command": "string|nullable",
    "build_command": "string|nullable",
    "start_command": "string|nullable",
    "ports_exposes": f"string|regex:{PORTS}",
    "ports_mappings": r"string|regex:\d+:\d+(,\d+:\d+)*|nullable",
    "base_directory": "string|nullable",
    "publish_directory": "string|nullable",
    "health_check_enabled": "boolean",
    "health_check_path": "string",
    "health_check_port": "string|nullable",
    "health_check_host": "string",
    "health_check_method": "string",
    "health_check_return_code": "numeric",
    "health_check_scheme": "string",
    "health_check_response_text": "string|nullable",
    "health_check_interval": "numeric",
    "health_check_timeout": "numeric",
    "health_check_retries": "numeric",
    "health_check_start_period": "numeric",
    "limits_memory": "string",
    "limits_memory_swap": "string",
    "limits_memory_swappiness": "numeric",
    "limits_memory_reservation": "string",
    "limits_cpus": "string",
    "limits_cpuset": "string|nullable",
    "limits_cpu_shares": "numeric",
    "custom_labels": "string|nullable",
    "custom_docker_run_options": "string|nullable",
    "post_deployment_command": "string|nullable",
    "post_deployment_command_container": "string",
    "pre_deployment_command": "string|nullable",
    "pre_deployment_command_container": "string",
    "redirect": "in:www,non-www,both",
    "instant_deploy": "boolean",
    "force_domain_override": "boolean",
    "use_build_server": "boolean",
    "connect_to_docker_network": "boolean",
    "is_static": "boolean",
    "build_pack": f"in:{BUILD_PACKS}",
    "git_repository": "string",
    "git_branch": "string",
    "watch_paths": "string|nullable",
}
PLACEMENT_RULES = {
    "project_uuid": "string|required",
    "server_uuid": "string|required",
    "environment_name": "string|nullable",
    "environment_uuid": "string|nullable",
    "destination_uuid": "string",
}
#: Request-only fields that are never stored on the application.
TRANSIENT = frozenset(
    {
        *PLACEMENT_RULES,
        "domains",
        "instant_deploy",
        "force_domain_override",
        "use_build_server",
        "is_static",
        "connect_to_docker_network",
    }
)


def _hosts(fqdn: str | None) -> set[str]:
    return {urlsplit(u).hostname or "" for u in (fqdn or "").split(",") if u} - {""}


def _normalize_domains(raw: str) -> str:
    """Validate Coolify's comma-separated URL list; returns the stored ``fqdn``."""
    urls = [u.strip().lower() for u in raw.strip().strip(",").split(",") if u.strip()]
    bad = [
        u for u in urls if urlsplit(u).scheme not in ("http", "https") or not urlsplit(u).hostname
    ]
    if bad:
        raise FakeHTTPError(
            422,
            {
                "message": "Validation failed.",
                "errors": {"domains": [f"Invalid domain: {u}" for u in bad]},
            },
        )
    return ",".join(urls)


class ApplicationsMixin(CoolifyStore):
    """``/applications``, start/stop/restart and ``/deploy``."""

    # -- test helpers --------------------------------------------------------------------

    def application(self, uuid: str) -> JSON:
        """The full stored record, including the fake's ``_project_uuid`` etc."""
        with self._read() as data:
            return dict(self._app(data, uuid))

    def deployments(self) -> list[JSON]:
        """Every deployment the fake queued, oldest first."""
        with self._read() as data:
            return [dict(d) for d in data["deployments"]]

    # -- applications --------------------------------------------------------------------

    def _application_view(self, application: JSON) -> JSON:
        """What the API shows: no internal id, no project/server/environment."""
        view = public_fields(application)
        view.pop("id", None)
        return view

    def list_applications(self) -> list[JSON]:
        with self._read() as data:
            return [self._application_view(a) for a in data["applications"].values()]

    def get_application(self, uuid: str) -> JSON:
        with self._read() as data:
            return self._application_view(self._app(data, uuid))

    def create_application(self, kind: str, body: JSON) -> JSON:
        """``POST /applications/{dockerimage,public}``; checks run in Coolify's order."""
        specific = _kind_rules(kind, body)
        allowed = {*SHARED_RULES, *PLACEMENT_RULES, *specific}
        validate(
            body,
            {
                **{k: v for k, v in PLACEMENT_RULES.items()},
                "name": "string|max:255",
                "description": "string|nullable",
            },
            allowed,
        )
        if not body.get("environment_name") and not body.get("environment_uuid"):
            raise FakeHTTPError(422, {"message": NEED_ENVIRONMENT})
        with self._write() as data:
            project = self._project(data, body["project_uuid"])
            environment = self._find_environment(
                data, project, body.get("environment_name") or "", by_uuid=False
            )
            if environment is None and body.get("environment_uuid"):
                environment = self._find_environment(data, project, body["environment_uuid"])
            if environment is None:
                raise not_found("Environment")
            if body["server_uuid"] not in data["servers"]:
                raise not_found("Server")
            validate(body, {**SHARED_RULES, **specific})
            fqdn = _normalize_domains(body["domains"]) if body.get("domains") else None
            if fqdn and not laravel_bool(body.get("force_domain_override")):
                self._check_domains(data, fqdn, exclude=None)
            now = laravel_time()
            record: JSON = {
                "id": self._next_id(data),
                "uuid": cuid(),
                "name": body.get("name"),
                "description": body.get("description"),
                "fqdn": fqdn,
                "status": "exited",
                "git_commit_sha": "HEAD",
                "ports_mappings": None,
                "health_check_enabled": False,
                "health_check_path": "/",
                "created_at": now,
                "updated_at": now,
            }
            record.update({k: v for k, v in body.items() if k not in TRANSIENT})
            record.update(_kind_defaults(kind, body))
            record["name"] = record["name"] or _default_name(kind, record)
            record.update(
                _project_uuid=project["uuid"],
                _environment_uuid=environment["uuid"],
                _server_uuid=body["server_uuid"],
            )
            data["applications"][record["uuid"]] = record
            data["envs"][record["uuid"]] = {}
            if laravel_bool(body.get("instant_deploy")):
                self._queue(data, record, "deploy")
            return {"uuid": record["uuid"]}

    def update_application(self, uuid: str, body: JSON) -> JSON:
        allowed = {
            *SHARED_RULES,
            "docker_registry_image_name",
            "docker_registry_image_tag",
            "dockerfile",
            "docker_compose_location",
            "docker_compose_raw",
        }
        validate(body, SHARED_RULES, allowed)
        with self._write() as data:
            record = self._app(data, uuid)
            if "domains" in body:
                fqdn = _normalize_domains(body["domains"]) if body["domains"] else None
                if fqdn and not laravel_bool(body.get("force_domain_override")):
                    self._check_domains(data, fqdn, exclude=uuid)
                record["fqdn"] = fqdn
            record.update({k: v for k, v in body.items() if k not in TRANSIENT})
            record["updated_at"] = laravel_time()
            if laravel_bool(body.get("instant_deploy")):
                self._queue(data, record, "deploy")
            return {"uuid": uuid}

    def delete_application(self, uuid: str) -> JSON:
        with self._write() as data:
            self._app(data, uuid)
            del data["applications"][uuid]
            data["envs"].pop(uuid, None)
            return {"message": "Application deletion request queued."}

    def action(self, uuid: str, action: str) -> JSON:
        """start / stop / restart: queue the job and flip ``status`` right away."""
        with self._write() as data:
            record = self._app(data, uuid)
            if action == "stop":
                record["status"] = "exited"
                return {"message": "Application stopping request queued."}
            deployment = self._queue(data, record, action)
            message = (
                "Restart request queued." if action == "restart" else "Deployment request queued."
            )
            return {"message": message, "deployment_uuid": deployment}

    def deploy(self, uuids: list[str], force: bool) -> JSON:
        with self._write() as data:
            deployments = []
            for uuid in uuids:
                record: JSON | None = data["applications"].get(uuid)
                if record is None:
                    continue
                deployments.append(
                    {
                        "message": f"Application {record['name']} deployment queued.",
                        "resource_uuid": uuid,
                        "deployment_uuid": self._queue(
                            data, record, "force-deploy" if force else "deploy"
                        ),
                    }
                )
            if not deployments:
                raise FakeHTTPError(404, {"message": "No resources found."})
            return {"deployments": deployments}

    def _queue(self, data: JSON, record: JSON, kind: str) -> str:
        deployment = cuid()
        data["deployments"].append(
            {
                "deployment_uuid": deployment,
                "application_uuid": record["uuid"],
                "kind": kind,
                "at": laravel_time(),
            }
        )
        record["status"] = "running:healthy"
        return deployment

    def _check_domains(self, data: JSON, fqdn: str, exclude: str | None) -> None:
        wanted = _hosts(fqdn)
        conflicts = []
        for other in data["applications"].values():
            if other["uuid"] == exclude:
                continue
            for host in sorted(wanted & _hosts(other.get("fqdn"))):
                conflicts.append(
                    {
                        "domain": host,
                        "resource_name": other["name"],
                        "resource_uuid": other["uuid"],
                        "resource_type": "application",
                        "message": f"Domain {host} is already in use by application "
                        f"'{other['name']}'",
                    }
                )
        if conflicts:
            raise FakeHTTPError(
                409,
                {
                    "message": DOMAIN_CONFLICT,
                    "conflicts": conflicts,
                    "warning": "Using the same domain for multiple resources can cause routing "
                    "conflicts and unpredictable behavior.",
                },
            )


def _kind_rules(kind: str, body: JSON) -> dict[str, str]:
    if kind == "dockerimage":
        return {
            "docker_registry_image_name": "string|required",
            "docker_registry_image_tag": "string",
            "ports_exposes": f"string|regex:{PORTS}|required",
        }
    ports = (
        "string" if body.get("build_pack") == "dockercompose" else f"string|regex:{PORTS}|required"
    )
    return {
        "git_repository": "string|required",
        "git_branch": "string|required",
        "build_pack": f"required|in:{BUILD_PACKS}",
        "ports_exposes": ports,
    }


def _kind_defaults(kind: str, body: JSON) -> JSON:
    if kind == "dockerimage":
        return {
            "build_pack": "dockerimage",
            "docker_registry_image_tag": body.get("docker_registry_image_tag") or "latest",
            "git_repository": "coollabsio/coolify",
            "git_branch": "main",
        }
    repo = body["git_repository"]
    parts = urlsplit(repo)
    if parts.scheme and parts.netloc:
        segments = [s for s in parts.path.split("/") if s]
        repo = "/".join(segments[:2]).removesuffix(".git")
    defaults: JSON = {"git_repository": repo}
    if body.get("build_pack") == "dockercompose":
        defaults["ports_exposes"] = "80"
    return defaults


def _default_name(kind: str, record: JSON) -> str:
    """Coolify's generated names: ``docker-image-<cuid>`` or ``<owner>/<repo>:<branch>-<cuid>``."""
    if kind == "dockerimage":
        return f"docker-image-{cuid()}"
    return f"{record['git_repository']}:{record['git_branch']}-{cuid()}".lower()
