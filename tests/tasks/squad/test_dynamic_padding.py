"""SQuAD batches cut to their longest feature, read from the features' TFRecords: the
logits of every real position are fixed padding's, the cut ones come back as the lowest float32,
and predictions.json / nbest_predictions.json are the same."""

import json

import numpy as np

from bert_tf.tasks.squad import run as squad_run
from bert_tf.tasks.squad.inputs import record_lengths
from bert_tf.tasks.squad.task import SquadTask
from tests.tasks.padding_twins import cut_lengths, run_both, trainer_of
from tests.tasks.squad.squad_files import SEQ, run_record, write_squad
from tests.tiny import tiny_config


def test_logits_and_answers_equal_fixed_padding(tmp_path, vocab, tokenizer):
    dev = write_squad(tmp_path / "dev.json", lengths=(2, 3, 4, 11))  # short passages: short features
    record = run_record()
    inputs = squad_run.read_inputs(squad_run.InputFiles(predict_file=dev), False, True, tokenizer, vocab, record,
                                   str(tmp_path / "features"))
    records = inputs.predict.records
    lengths = record_lengths(records)
    # [CLS] where is the cat ? [SEP] passage [SEP]; the 11-word passage takes windows of SEQ.
    assert lengths.tolist()[:6] == [10, 10, 11, 11, 12, 12] and max(lengths) == SEQ
    trainer = trainer_of(SquadTask(tiny_config(vocab_size=len(tokenizer.vocab)), SEQ), tmp_path)
    (_, fixed), (cut, _, logits) = run_both(trainer, records, evaluate=False)
    assert cut == cut_lengths(lengths, SEQ) and min(cut) < SEQ
    batch_length = np.repeat(cut, 2)[: records.count]
    for name in ("start_logits", "end_logits"):
        assert logits[name].shape == fixed[name].shape == (records.count, SEQ)
        kept = np.arange(SEQ)[None, :] < batch_length[:, None]
        np.testing.assert_allclose(logits[name][kept], fixed[name][kept], atol=1e-5)
        assert (logits[name][~kept] == np.finfo(np.float32).min).all()
    # n_best_size 20 >= SEQ: both rank every position, the cut ones last.
    written = {}
    for mode, values in (("fixed", fixed), ("cut", logits)):
        out = tmp_path / mode
        out.mkdir()
        squad_run.write_answers(dev, tokenizer, record, squad_run.AnswerSettings(), values, str(out))
        names = (squad_run.PREDICTIONS_FILE, squad_run.NBEST_FILE)
        written[mode] = [json.loads((out / name).read_text()) for name in names]
    assert written["cut"][0] == written["fixed"][0]
    for question, entries in written["fixed"][1].items():
        got = written["cut"][1][question]
        assert [e["text"] for e in got] == [e["text"] for e in entries]
        np.testing.assert_allclose([e["probability"] for e in got], [e["probability"] for e in entries], atol=1e-5)
