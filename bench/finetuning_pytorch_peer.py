"""bench/finetuning.py's PyTorch peer, in a process of its own (bench/peer_process.py says why and
the protocol): the bench starts one, with a variant for each text and padding, and takes turns
with it. Not run by hand:

    python bench/finetuning_pytorch_peer.py SPEC.json

SPEC (written by bench/finetuning.py): vocab.txt, the model's shape, --seq_length, --batch_size,
--steps, --rounds, the folder holding transformers and torch, and the threads; each variant (text
and padding) its examples' texts and labels and its padding ("dynamic": each batch padded to its
longest row by DataCollatorWithPadding, as transformers' Trainer does; "fixed": to --seq_length).
The step: transformers' BertForSequenceClassification (tanh GELU, as ours), eager, torch's AdamW
(weight decay 0.01), linear warm-up and decay, gradients clipped to norm 1; the text tokenized once up front by the fast
tokenizer from the same vocab.txt (as `datasets.map` does).
"""

import numpy as np
import peer_process  # bench/, this script's folder


def trainer(spec, torch, transformers):
    """A function running `steps` training steps on the spec's examples, after 10 warm-up steps."""
    tokenizer = transformers.BertTokenizerFast(vocab_file=spec["vocab"], do_lower_case=True)
    a, b, y = spec["text_a"], spec["text_b"], spec["labels"]
    encoded = tokenizer(a, b if b[0] is not None else None, truncation=True, max_length=spec["seq_length"])
    rows = [{**{k: v[i] for k, v in encoded.items()}, "labels": y[i]} for i in range(len(y))]
    fixed = {"padding": "max_length", "max_length": spec["seq_length"]} if spec["padding"] == "fixed" else {}
    collate = transformers.DataCollatorWithPadding(tokenizer, **fixed)
    torch.manual_seed(0)
    model = transformers.BertForSequenceClassification(transformers.BertConfig(
        vocab_size=spec["vocab_size"], hidden_size=spec["hidden_size"], num_hidden_layers=spec["num_layers"],
        num_attention_heads=spec["num_heads"], intermediate_size=spec["intermediate_size"], hidden_act="gelu_new",
        type_vocab_size=2, num_labels=2,
    ))
    model.train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=5e-5, weight_decay=0.01)
    batch_size = spec["batch_size"]
    schedule = transformers.get_linear_schedule_with_warmup(optimizer, 10, 10 + spec["rounds"] * spec["steps"])
    order = np.random.default_rng(0).permutation(len(rows))
    position = [0]

    def run(steps):
        for _ in range(steps):
            start = position[0] % (len(rows) - batch_size)
            position[0] += batch_size
            batch = collate([rows[i] for i in order[start:start + batch_size]])
            # The phases, named for bench/step_profile.py (free while no profiler runs).
            with torch.profiler.record_function("forward"):
                loss = model(**batch).loss
            with torch.profiler.record_function("backward"):
                loss.backward()
            with torch.profiler.record_function("clipping"):
                torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            with torch.profiler.record_function("optimizer"):
                optimizer.step()
                schedule.step()
                optimizer.zero_grad()

    run(10)  # warm-up
    return run


if __name__ == "__main__":
    peer_process.serve(trainer)
