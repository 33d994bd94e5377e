"""AppTest for app_pages/rank_aware_fm.py."""

import pytest
from apptest import app_page, figure, wait_for_training
from page_order import block_tables, of_type, position, starts

from fmlib.experiments import rafm as rafm_experiment

PAGE = "app_pages/rank_aware_fm.py"


@pytest.fixture(autouse=True)
def isolated_results(tmp_path, monkeypatch):
    monkeypatch.setenv("FMLIB_RESULTS", str(tmp_path / "results"))


def page(dataset="synthetic"):
    at = app_page(PAGE, timeout=60, dataset=dataset)
    at.run()
    assert not at.exception
    return at


def test_movielens_histogram_thresholds_and_parameters():
    at = page("ml-100k")
    assert not at.error
    hist = figure(at, 0)
    fields = {trace["name"] for trace in hist["data"]}
    assert {"user_id", "movie_id", "genres"} <= fields
    texts = [a["text"] for a in hist["layout"]["annotations"]]
    assert "t = 16" in texts and "rank D = 8" in texts and "rank D = 32" in texts
    assert "never occur" in at.info[0].value  # the rare buckets have zero train occurrences
    metric = at.metric[0]
    assert "% of FM(32)" in metric.delta
    at.text_input(key="rafm_ranks").set_value("4,16,64").run()
    texts = [a["text"] for a in figure(at, 0)["layout"]["annotations"]]
    assert {"t = 8", "t = 32", "rank D = 4", "rank D = 16", "rank D = 64"} <= set(texts)
    assert "% of FM(64)" in at.metric[0].delta


@pytest.mark.parametrize(
    "text, message",
    [
        ("32,8", "strictly increasing"),
        ("16", "at least two ranks"),
        ("0,8", "positive"),
        ("8,abc", "comma-separated integers"),
    ],
)
def test_bad_rank_sets_get_clear_errors(text, message):
    at = page()
    at.text_input(key="rafm_ranks").set_value(text).run()
    assert not at.exception
    assert message in at.error[0].value
    assert not at.get("plotly_chart")


def test_saved_comparison_is_plotted(tmp_path):
    records = []
    for seed in (0, 1):
        for model, params, rmse in [
            ("FM(8)", 100, 0.95),
            ("FM(32)", 400, 0.97),
            ("RaFM(8, 32)", 300, 0.94),
            ("RaFM-low", 90, 0.96),
        ]:
            records.append(
                {
                    "seed": seed,
                    "model": model,
                    "kind": "x",
                    "epochs": 5,
                    "parameters": params,
                    "train_seconds_per_epoch": 1.0,
                    "test_seconds": 0.1,
                    "test_rmse": rmse + seed / 100,
                    "test_mae": 0.7,
                    "parameters_vs_top_fm": params / 400,
                    "train_time_vs_top_fm": 1.0,
                    "test_time_vs_top_fm": 1.0,
                }
            )
    for r in records:
        r["kind"] = "rafm" if r["model"].startswith("RaFM(") else "rafm-low" if r["model"] == "RaFM-low" else "fm"
        r["rank"] = int(r["model"][3:-1]) if r["kind"] == "fm" else 0
        r["test_mse"] = r["valid_mse"] = r["test_rmse"] ** 2
    result = rafm_experiment.as_result("synthetic", [8, 32], [0, 1], "rating", records)
    rafm_experiment.save(result, rafm_experiment.results_path("synthetic"), "python -m fmlib reproduce rafm")
    at = page()
    fig = figure(at, 2)
    bars = fig["data"][0]
    assert list(bars["x"]) == ["FM(8)", "FM(32)", "RaFM(8, 32)", "RaFM-low"]
    assert any("0.9450" in c.value for c in at.code)  # RaFM mean over the two seeds
    verdicts = next(d.value for d in at.dataframe if "other" in d.value).set_index("other")
    assert set(verdicts.index) == {"FM(8)", "FM(32)"}  # FM(8): the best on validation; FM(32): the largest


def test_run_one_seed_here_trains_and_plots():
    at = page()
    at.text_input(key="rafm_ranks").set_value("2,4").run()
    wait_for_training(at.button(key="rafm_run_seed").click().run(), key="rafm_seed_job")
    assert not at.exception
    assert not at.error, at.error[0].value
    assert list(figure(at, 2)["data"][0]["x"]) == ["FM(2)", "FM(4)", "RaFM(2, 4)", "RaFM-low"]


def test_the_parameter_shares_are_the_lessons_and_the_tables_and_nothing_rounds_to_100():
    """Section 1's metric states the lesson stop's numbers (embedding numbers, from the same parameter_summary);
    the caption under it the total section 3's table prints; occurrence shares below 1 never show as 100 %."""
    import re

    from fmapp.lessons.answers import rafm_parameter_share

    at = page("ml-100k")
    assert not at.error
    stop = rafm_parameter_share("ml-100k", (8, 32)).text  # what the lesson's stop says
    stated = re.search(r"stores ([\d,]+) embedding numbers, ([\d.]+) % of the ([\d,]+) of an FM", stop).groups()
    assert (at.metric[0].value, at.metric[0].delta) == (stated[0], f"{stated[1]} % of FM(32)'s")
    assert any(f"$D_h |F|$ = {stated[2]} for FM(32)" in m.value for m in at.markdown)
    table = next(c.value for c in at.code if "RaFM(8, 32) " in c.value)  # format_table of the committed comparison
    (line,) = [line for line in table.splitlines() if line.startswith("RaFM(8, 32) ") and "cut at" not in line]
    shown = re.search(r"(\d+\.\d)%", line).group(1)
    assert any(f"parameters, {shown} % of FM(32)'s." in c.value for c in at.caption)
    (sentence,) = [m.value for m in at.markdown if "Share of occurrences" in m.value]
    shares = re.search(r"Share of occurrences in each \$F_k\$: (.*) — ", sentence).group(1).split(", ")
    from fmlib.analysis.frequency import parameter_summary
    from fmlib.data import movielens, split

    summary = parameter_summary(split(movielens.load("ml-100k"), seed=0).train.feature_counts(), (8, 32))
    assert len(shares) == len(summary["occurrence_share"])
    for text, share in zip(shares, summary["occurrence_share"]):
        assert (text == "100 %") == (share == 1), (text, share)
        if text == "> 99.9 %":
            assert 0.999 < share < 1
        elif share < 1:
            assert float(text.split()[0]) == pytest.approx(100 * share, abs=0.05), text


def example_for(name, ranks):
    """What the page's worked example shows, straight from fmlib: eq. 17 on five movies (or five features of the
    largest field) spanning the training counts."""
    from app_pages._ui import load_split
    from fmapp.worked import example_rows, rank_example

    data = load_split(name, 0)
    names = [f.name for f in data.schema.fields]
    field = data.schema.field(
        "movie_id" if "movie_id" in names else max(data.schema.fields, key=lambda f: f.cardinality).name
    )
    counts = data.train.feature_counts()
    rows = example_rows(counts, range(field.offset, field.offset + field.cardinality))
    return rank_example(counts, ranks, rows, [str(r) for r in rows])


@pytest.mark.parametrize("name", ["synthetic", "ml-100k"])
def test_the_page_opens_with_eq_17_on_five_features_before_the_histogram(name):
    at = page(name)
    title = "Eq. 17 on five movies" if name == "ml-100k" else "Eq. 17 on five features of"
    [table] = block_tables(at, title)
    expected = example_for(name, (8, 32))
    assert table["nᵢ (train)"].tolist() == expected["n_i"].tolist()
    assert table["level kᵢ"].tolist() == expected["k_i"].tolist()
    assert table["its rank"].tolist() == expected["D_k_i"].tolist()
    assert table["|log nᵢ − log 32|"].tolist() == pytest.approx(expected["|log n_i − log 32|"].tolist())
    assert table["nᵢ / 32"].tolist() == pytest.approx(expected["n_i / 32"].tolist())
    if name == "ml-100k":
        assert table.index[0] == "Star Wars"  # the most rated movie in the training split, by its title
    opens = position(at, starts(f"**{title}"))
    assert position(at, starts("**Should a movie")) < opens < position(at, starts("1 · How often"))
    assert opens < position(at, of_type("plotly_chart"))
    sentence = next(m.value for m in at.markdown if m.value.startswith("Each sample a feature occurs in"))
    rare = expected.iloc[-1]
    assert f"keeps $D_{{{rare.k_i}}} = {rare.D_k_i}$ numbers" in sentence and "\\sqrt{8\\cdot32} = 16" in sentence


def test_the_worked_example_follows_the_rank_set():
    at = page()
    at.text_input(key="rafm_ranks").set_value("4,16,64").run()
    assert not at.exception
    [table] = block_tables(at, "Eq. 17 on five features of")
    expected = example_for("synthetic", (4, 16, 64))
    assert table["level kᵢ"].tolist() == expected["k_i"].tolist()
    assert {"|log nᵢ − log 4|", "|log nᵢ − log 16|", "|log nᵢ − log 64|"} <= set(table.columns)


def test_the_seed_run_here_is_quick_unless_the_tuned_presets_are_chosen():
    """A student's click on *Run one seed here* trains the quick settings (a few epochs each); the tuned
    presets, up to their epoch budget, are the labelled other choice."""
    from fmlib.train import quick_model_settings

    at = page("ml-100k")
    quick = quick_model_settings("ml-100k", "fm")[0]
    choice = at.radio(key="rafm_seed_settings")
    assert choice.value == choice.options[0] == f"quick: {quick.epochs} epochs each at lr {quick.lr:g}"
    budget = max(config.epochs for config, _, _ in rafm_experiment.preset_settings("ml-100k", (8, 32)).values())
    assert choice.options[1].startswith(f"tuned presets: up to {budget} epochs each")


def test_the_planted_finding_is_read_from_its_table():
    """Section 4's planted paragraph: every number from the committed planted table and the data's defaults."""
    import pandas as pd

    from app_pages._ui import variant_as_math
    from fmlib.data.synthetic import PLANTED_RANKS
    from fmlib.experiments import tables

    path = tables.newest(rafm_experiment.table_name(PLANTED_RANKS, "rating", "rafm-paper"))
    frame = pd.DataFrame(rafm_experiment.load(path)["records"])
    text = next(m.value for m in page().markdown if m.value.startswith("**Planted data"))
    for row in rafm_experiment.top_rank_verdicts(frame, "rating").itertuples():
        assert (
            f"**{variant_as_math(row.favoured)}** {row.difference:+.4f} [{row.low:+.4f}, {row.high:+.4f}] MSE, *{row.verdict}*"
            in text
        )
    setup = rafm_experiment.planted_setup()
    assert f"{setup['n_samples']:,} ratings" in text and f"the noise {setup['variances']['noise']:.2f}" in text
