"""Reading an eval file (``_eval/eval_file.py``): a name it defines that evaldag would ignore is
an error naming where the setting goes."""

import pytest

from evaldag import EvalDagError
from evaldag._eval.eval_file import eval_definition

EVAL = """\
from evaldag import create_scorer
scorers = [create_scorer("s").generate_score(lambda run: 1.0)]
{name} = {value}
"""


@pytest.mark.parametrize(
    ("name", "value", "flag"),
    [
        ("max_error_share", "0.1", "--max-error-share"),
        ("trials", "5", "--trials"),
        ("reducer", "'median'", "--reducer"),
        ("budget_usd", "2.5", "--budget-usd"),
        ("step_timeout", "30", "--step-timeout"),
        ("target_timeout", "30", "--target-timeout"),
    ],
)
def test_a_run_setting_in_an_eval_file_is_an_error_not_ignored(tmp_path, name, value, flag):
    # max_error_share = 0.1 was ignored: a run whose scorer failed on 30 % of the items passed.
    path = tmp_path / "eval_settings.py"
    path.write_text(EVAL.format(name=name, value=value))
    with pytest.raises(EvalDagError) as raised:
        eval_definition(str(path))
    assert raised.value.id == "EVAL_UNKNOWN_NAME"
    assert f"defines '{name}', which evaldag does not read" in raised.value.message
    assert f"give {flag} to 'evaldag run', or {name}= to run_evals" in raised.value.message


def test_a_helper_constant_is_still_fine(tmp_path):
    path = tmp_path / "eval_helpers.py"
    path.write_text(EVAL.format(name="concurrency", value="4"))
    assert len(eval_definition(str(path)).scorers) == 1
