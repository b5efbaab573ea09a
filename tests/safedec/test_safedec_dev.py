"""The dev procedure that chooses the policy's training recipe (opt-in part ``dev``): the rule
picks the argmax of a planted table, stage 2 runs only the stage-1 choice, bad inputs fail, and
the claims' configs use the chosen recipe."""

from types import SimpleNamespace

import numpy as np
import pytest
import torch

from icml26.safedec import experiment as ex
from icml26.safedec.data import CELL
from icml26.safedec.policy import NavTransformer, goal_fine_features


def test_choose_recipe_picks_the_argmax_of_a_planted_table():
    assert ex.choose_recipe({"spec": 39.0, "ls0": 57.5, "ls0_goal": 71.0, "ls0_goal_4k": 70.5}) == "ls0_goal"
    assert ex.choose_recipe({"spec": 80.0, "ls0": 10.0}) == "spec"


def test_choose_recipe_ties_go_to_the_earlier_recipe():
    assert ex.choose_recipe({"spec": 50.0, "ls0": 60.0, "ls0_goal": 60.0}) == "ls0"


@pytest.mark.parametrize("bad", [{}, None, [("spec", 1.0)], {"spec": float("nan")}, {"spec": np.inf},
                                 {"spec": "70"}, {"spec": True}])
def test_choose_recipe_refuses_bad_tables(bad):
    with pytest.raises(ValueError, match="scores"):
        ex.choose_recipe(bad)


def test_recipe_names_and_overrides():
    assert ex.recipe("spec") == ex.BASE_RECIPE
    assert ex.recipe("ls0_goal_4k") == {**ex.BASE_RECIPE, "label_smoothing": 0.0, "goal_features": True,
                                        "n_demos": 4000}
    with pytest.raises(ValueError, match="recipe must be one of"):
        ex.recipe("no_such_recipe")
    for over in ex.DEV_RECIPES.values():      # a recipe only sets fields the configs have
        assert set(over) <= set(ex.BASE_RECIPE)


def test_claim_configs_use_the_chosen_recipe():
    chosen = ex.recipe(ex.CHOSEN_RECIPE)
    for config in (ex.MainConfig(), ex.AlphaConfig(), ex.MismatchConfig()):
        assert {k: getattr(config, k) for k in ex.BASE_RECIPE} == chosen


def test_dev_seeds_are_not_test_seeds():
    test_seeds = {s for part in ex.EXPERIMENT.parts if part.name != "dev" for s in part.seeds}
    assert not set(ex.DEV_SEEDS) & test_seeds
    with pytest.raises(ValueError, match="DEV_SEEDS"):
        ex.run_dev(ex.DevConfig(), 0, {"recipe": "spec"})


def test_stage_two_runs_only_the_stage_one_choice(monkeypatch):
    planted = {"spec": 40.0, "ls0": 58.0, "ls0_goal": 75.0, "ls0_goal_4k": 72.0}
    calls = []

    def fake(config, seed, name):
        calls.append((seed, name))
        return {"recipe": name, "success": planted[name] - (seed == ex.DEV_SEEDS[1])}

    monkeypatch.setattr(ex, "dev_score", fake)
    config = ex.DevConfig()
    jobs = [SimpleNamespace(seed=s, metrics=ex.run_dev(config, s, {"recipe": r}))
            for s in ex.DEV_SEEDS for r in config.recipes]
    ran = [j.metrics["recipe"] for j in jobs if j.seed == ex.DEV_SEEDS[1] and not j.metrics.get("skipped")]
    assert ran == ["ls0_goal"]
    assert (ex.DEV_SEEDS[1], "spec") not in calls           # no other recipe is trained on seed 101
    result = ex.summarize_dev(jobs, config)
    assert result.measurements["chosen_dev_sr"].value == 75.0
    assert result.measurements["confirm_dev_sr"].value == 74.0
    assert "'ls0_goal'" in result.notes[0]


def test_summarize_dev_is_incomplete_without_the_whole_stage_one():
    jobs = [SimpleNamespace(seed=ex.DEV_SEEDS[0], metrics={"stage": 1, "recipe": "spec", "success": 90.0})]
    m = ex.summarize_dev(jobs, ex.DevConfig()).measurements
    assert m["chosen_dev_sr"].incomplete and m["confirm_dev_sr"].incomplete


def test_goal_fine_features_resolve_single_cells():
    one_cell = CELL / 8.0                                   # (g − p)/8 of one cell
    obs = torch.zeros(3, 94)
    obs[1, 2], obs[1, 4] = one_cell, one_cell               # one cell east
    obs[2, 2:4], obs[2, 4] = -10 * one_cell, 10 * one_cell  # far away (clipped at 4 cells)
    f = goal_fine_features(obs)
    assert torch.allclose(f[0], torch.tensor([0.0, 0.0, 1.0, 1.0]))
    assert torch.allclose(f[1], torch.tensor([0.25, 0.0, np.exp(-0.5), np.exp(-1 / 8)], dtype=torch.float32))
    assert f[2, 0] == -1.0 and f[2, 2] < 1e-10


def test_goal_features_leave_the_default_model_unchanged():
    torch.manual_seed(0)
    plain = NavTransformer()
    torch.manual_seed(0)
    extra = NavTransformer(goal_features=True)
    for (name, p), (_, q) in zip(plain.named_parameters(), extra.named_parameters()):
        assert torch.equal(p, q), name
    assert plain.goal_in is None and extra.goal_in is not None


def test_recipe_name_of_a_config():
    assert ex.recipe_name(ex.MainConfig()) == ex.CHOSEN_RECIPE
    assert ex.recipe_name(ex.MainConfig(**ex.recipe("ls0_goal_4k"))) == "ls0_goal_4k"
    assert ex.recipe_name(ex.MainConfig(train_steps=7)) == "custom"
