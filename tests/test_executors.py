"""Row batches on Dask (a real local cluster) and Ray give the same results as a local run."""

import pandas as pd
import pytest

from evaldag import EvalDagError, EvalResult, create_scorer, not_scorable, run_evals

DATA = pd.DataFrame(
    {"input": [str(i) for i in range(60)], "output": ["x" * (i % 13) for i in range(60)]}
)


def _config():
    length = (
        create_scorer("len")
        .preprocess(lambda run: len(run.output))
        .generate_score(
            lambda preprocess_step_result: (
                not_scorable("empty")
                if preprocess_step_result == 0
                else min(1, preprocess_step_result / 10)
            )
        )
    )
    flaky = create_scorer("flaky").generate_score(lambda run: 1 / 0 if run.input == "7" else 0.5)
    return {
        "scorers": [length.with_threshold(0.3), flaky],
        "gates": [create_scorer("gate").generate_score(lambda run: 1.0)],
    }


def _same(a, b):
    columns = [c for c in a.items.columns if c != "run_id"]  # run ids are fresh per run
    return a.to_dict() == b.to_dict() and a.items[columns].equals(b.items[columns])


@pytest.mark.slow
def test_dask_local_cluster_gives_the_local_result(tmp_path):
    pytest.importorskip("distributed")
    local = run_evals(DATA, **_config())
    out = tmp_path / "results.parquet"
    distributed = run_evals(DATA, **_config(), executor="dask", batch_size=16, out=out)
    assert _same(distributed, local)
    assert distributed.summary.errors == {"flaky": 1}
    assert EvalResult.read_parquet(out) == distributed  # written as a local run writes it


def test_ray_gives_the_local_result():
    pytest.importorskip("ray", reason="the 'ray' extra is not installed")
    local = run_evals(DATA, **_config())
    assert _same(run_evals(DATA, **_config(), executor="ray", batch_size=16), local)


@pytest.mark.parametrize(
    "option", [{"checkpoint": "run.parquet"}, {"on_error": "raise"}, {"on_item_complete": print}]
)
def test_options_that_need_a_local_run(option):
    with pytest.raises(EvalDagError, match="cannot be combined with executor"):
        run_evals(DATA, **_config(), executor="dask", **option)


def test_unknown_executor():
    with pytest.raises(EvalDagError, match="executor must be 'dask', 'ray'"):
        run_evals(DATA, **_config(), executor="spark")
