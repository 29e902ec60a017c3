import json

from bert_tf.tasks.squad import metrics as squad_metrics
from tests.run_scripts.conftest import run_script


def _dataset(version, *questions):
    qas = [
        {"id": qid, "question": "?", "answers": [{"text": t, "answer_start": 0} for t in golds]}
        for qid, golds in questions
    ]
    return {"version": version, "data": [{"title": "t", "paragraphs": [{"context": "c", "qas": qas}]}]}


def _write(path, value):
    path.write_text(json.dumps(value))
    return str(path)


def test_v2_with_na_probs_writes_the_official_json(tmp_path):
    dataset = _dataset("v2.0", ("q1", ["Paris"]), ("q2", ["big red dog"]), ("q3", []), ("q4", []))
    data = _write(tmp_path / "dev-v2.0.json", dataset)
    predictions = {"q1": "paris", "q2": "red", "q3": "foo", "q4": ""}
    na_probs = {"q1": 0.1, "q2": 0.6, "q3": 0.7, "q4": 0.8}
    preds, na = _write(tmp_path / "predictions.json", predictions), _write(tmp_path / "null_odds.json", na_probs)
    out = tmp_path / "eval.json"

    result = run_script(
        "evaluate_squad.py", data, preds, f"--na_prob_file={na}", "--na_prob_thresh=0.5", f"--out_file={out}"
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout == ""  # --out_file replaces stdout, as in evaluate-v2.0.py
    expected = squad_metrics.evaluate(data, predictions, na_probs, na_prob_thresh=0.5)
    assert out.read_text() == json.dumps(expected)  # key order included
    assert expected["exact"] == 75.0 and expected["best_f1_thresh"] == 0.6


def test_v1_prints_one_line_and_reports_unanswered(tmp_path):
    data = _write(tmp_path / "dev-v1.1.json", _dataset("1.1", ("a", ["The Cat."]), ("b", ["dog"])))
    preds = _write(tmp_path / "predictions.json", {"a": "cat"})
    result = run_script("evaluate_squad.py", data, preds)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout == '{"exact_match": 50.0, "f1": 50.0}\n'
    assert "Unanswered question b will receive score 0." in result.stderr


def test_na_prob_file_missing_ids_is_one_clear_line(tmp_path):
    data = _write(tmp_path / "dev-v2.0.json", _dataset("v2.0", ("q1", ["Paris"]), ("q2", [])))
    preds = _write(tmp_path / "predictions.json", {"q1": "Paris", "q2": ""})
    na = _write(tmp_path / "null_odds.json", {"q1": 0.2})
    result = run_script("evaluate_squad.py", data, preds, f"--na_prob_file={na}")
    assert result.returncode == 1
    assert result.stderr.strip().splitlines()[-1] == (
        f"evaluate_squad.py: error: --na_prob_file={na}: no-answer probabilities are missing for 1 predicted "
        "questions, e.g. 'q2'"
    )
