"""The container image and the Kubernetes manifests, checked where no cluster runs: every
manifest loads, carries the fields KubeRay and Kubernetes require, names the one image, the
one work pool and the environment evalfleet reads; the image's commands exist in the project;
the Dockerfile installs the locked environment as a non-root user with no key baked in."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest
import yaml

from evalfleet.stack.runners import POOL

REPO = Path(__file__).resolve().parents[2]
K8S = REPO / "deployments" / "k8s"
IMAGE = "evalfleet:0.1.0"


def documents() -> list[dict]:
    docs = []
    for path in sorted(K8S.glob("*.yaml")):
        docs += [d for d in yaml.safe_load_all(path.read_text()) if d]
    return docs


def of_kind(kind: str) -> list[dict]:
    return [d for d in documents() if d["kind"] == kind]


def pod_specs() -> list[dict]:
    specs = []
    for doc in documents():
        if doc["kind"] == "RayCluster":
            specs.append(doc["spec"]["headGroupSpec"]["template"]["spec"])
            specs += [g["template"]["spec"] for g in doc["spec"]["workerGroupSpecs"]]
        elif doc["kind"] in ("Deployment", "Job"):
            specs.append(doc["spec"]["template"]["spec"])
    return specs


def test_every_manifest_has_what_kubernetes_requires():
    kinds = {(d["apiVersion"], d["kind"]) for d in documents()}
    assert kinds == {
        ("v1", "ConfigMap"),
        ("ray.io/v1", "RayCluster"),
        ("apps/v1", "Deployment"),
        ("batch/v1", "Job"),
    }
    for doc in documents():
        assert re.fullmatch(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?", doc["metadata"]["name"])
    for spec in pod_specs():
        for container in spec["containers"]:
            assert container["name"] and container["image"] == IMAGE
    (deployment,) = of_kind("Deployment")
    selector = deployment["spec"]["selector"]["matchLabels"]
    labels = deployment["spec"]["template"]["metadata"]["labels"]
    assert selector.items() <= labels.items()
    (job,) = of_kind("Job")
    assert job["spec"]["template"]["spec"]["restartPolicy"] in ("Never", "OnFailure")


def test_the_ray_cluster_head_hosts_no_work():
    (cluster,) = of_kind("RayCluster")
    spec = cluster["spec"]
    assert spec["rayVersion"] == "2.60.0"  # the Ray the lock file pins
    assert spec["headGroupSpec"]["rayStartParams"]["num-cpus"] == "0"
    for group in spec["workerGroupSpecs"]:
        assert group["groupName"]
        assert group["minReplicas"] <= group["replicas"] <= group["maxReplicas"]
        assert isinstance(group["rayStartParams"], dict)
    lock = (REPO / "uv.lock").read_text()
    assert re.search(r'name = "ray"\nversion = "2\.60\.0"', lock)


def test_the_workers_poll_the_pool_the_deployments_declare():
    declared = yaml.safe_load((REPO / "deployments" / "prefect.yaml").read_text())
    pools = {d["work_pool"]["name"] for d in declared["deployments"]}
    assert pools == {POOL}
    (deployment,) = of_kind("Deployment")
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    script = " ".join(container["args"])
    assert f"prefect worker start --pool {POOL} --type process" in script
    assert "ray start --address" in script and "--num-cpus=0" in script
    (job,) = of_kind("Job")
    script = " ".join(job["spec"]["template"]["spec"]["containers"][0]["args"])
    assert "deploy --all --prefect-file deployments/prefect.yaml" in script
    assert f"work-pool create {POOL} --type process" in script


def test_every_pod_gets_the_environment_and_keys_come_from_secrets():
    (config,) = of_kind("ConfigMap")
    wanted = {"PREFECT_API_URL", "RAY_ADDRESS", "RAY_AUTH_MODE", "EVALFLEET_STORE"}
    assert wanted <= set(config["data"])
    assert not any(re.search("KEY|SECRET|TOKEN", name) for name in config["data"])
    for spec in pod_specs():
        for container in spec["containers"]:
            sources = container.get("envFrom", [])
            assert {"configMapRef": {"name": config["metadata"]["name"]}} in sources
            for item in container.get("env", []):
                assert "value" not in item, f"{item['name']} is written in the manifest"
    (cluster,) = of_kind("RayCluster")
    head = cluster["spec"]["headGroupSpec"]["template"]["spec"]["containers"][0]
    tokens = [e for e in head["env"] if e["name"] == "RAY_AUTH_TOKEN"]
    assert tokens[0]["valueFrom"]["secretKeyRef"]["name"] == "evalfleet-secrets"


def test_the_image_commands_exist_in_the_project():
    project = tomllib.loads((REPO / "pyproject.toml").read_text())
    assert project["project"]["scripts"]["evalfleet"] == "evalfleet.cli.main:entry"
    dependencies = " ".join(project["project"]["dependencies"])
    assert "prefect==" in dependencies and "ray==" in dependencies  # `prefect`, `ray`
    assert (REPO / "deployments" / "prefect.yaml").is_file()
    for entry in yaml.safe_load((REPO / "deployments" / "prefect.yaml").read_text())["deployments"]:
        module, name = entry["entrypoint"].rsplit(".", 1)  # a module path
        path = REPO / "src" / Path(*module.split(".")).with_suffix(".py")
        assert f"def {name}(" in path.read_text()


@pytest.fixture(scope="module")
def dockerfile() -> str:
    return (REPO / "Dockerfile").read_text()


def test_the_dockerfile_installs_the_lock_as_a_user_without_keys(dockerfile):
    assert "uv sync --frozen --no-dev" in dockerfile
    assert "compileall" in dockerfile and "UV_COMPILE_BYTECODE=1" in dockerfile
    users = re.findall(r"^USER (\S+)", dockerfile, re.MULTILINE)
    assert users and users[-1] not in ("root", "0")
    assert re.search(r"^WORKDIR /app$", dockerfile, re.MULTILINE)
    assert "EVALFLEET_CODE_DIR=/app" in dockerfile  # prefect.yaml's pull step goes there
    for line in dockerfile.splitlines():
        if line.strip().startswith(("ENV", "ARG")) or "=" in line:
            assert not re.search(r"(API_KEY|SECRET|PASSWORD|AUTH_TOKEN)\s*=", line), line
    assert {".venv", ".git", "runs"} <= set((REPO / ".dockerignore").read_text().split())
