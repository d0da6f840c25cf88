"""run_evals on a real local Ray instance with 2 workers: every case of
``tests/cluster_cases.py``, as on Dask (``test_cluster.py``, which runs side by side with this
file under ``pytest -n 2 --dist loadfile``)."""

import os
import sys

import pytest
from cluster_cases import ClusterCases

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def ray_cluster():
    """Ray started once for the module: 2 CPUs (2 workers), no dashboard, and the workers
    import what this process imports (its ``sys.path``), as ``run_evals`` sets it up."""
    ray = pytest.importorskip("ray", reason="the 'ray' extra is not installed")
    ray.init(
        num_cpus=2,
        include_dashboard=False,
        log_to_driver=False,
        runtime_env={"env_vars": {"PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}},
    )
    yield "ray"
    ray.shutdown()


@pytest.fixture
def executor(ray_cluster):
    """``"ray"``: the Ray instance this module started (run_evals finds it initialized)."""
    return ray_cluster


@pytest.fixture
def executor_option(ray_cluster):
    return ray_cluster


class TestOnRay(ClusterCases):
    """Every case, on Ray (which retries the tasks of a worker killed)."""
