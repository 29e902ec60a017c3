"""bench/pretraining.py's PyTorch peer, in a process of its own (bench/peer_process.py says why and
the protocol). Not run by hand:

    python bench/pretraining_pytorch_peer.py SPEC.json

SPEC (written by bench/pretraining.py): the model's shape, --seq_length, --predictions,
--batch_size, --steps, the folder holding transformers and torch, and the threads, and a variant
for each dtype ("bfloat16" true or false); bench/accelerator.py writes no variants, and adds
"device" ("cuda"), "bfloat16" and "attention_probs_dropout_prob". The step: transformers'
BertForPreTraining's layers on PyTorch (eager, its default attention: SDPA) on one batch of
full-length synthetic instances; the masked-LM head reads the gathered positions only (as ours and
the original's do, not all --seq_length), the next-sentence head the pooled output; summed
cross-entropies, torch.optim.AdamW (weight decay 0.01), the gradient clipped to norm 1 as ours.
"bfloat16", as transformers' Trainer runs with `bf16=True`: bf16 autocast (on the CPU too); on a
GPU also the fused AdamW (its default optimizer there), the time read after the device has finished.
"""

import contextlib

import peer_process  # bench/, this script's folder


def trainer(spec, torch, transformers):
    """A function running `steps` training steps on one synthetic batch, after 3 warm-up steps."""
    H, S, P, B, V = (spec[k] for k in ("hidden_size", "seq_length", "predictions", "batch_size", "vocab_size"))
    device = torch.device(spec.get("device", "cpu"))
    on_gpu = device.type == "cuda"
    config = transformers.BertConfig(
        vocab_size=V, hidden_size=H, num_hidden_layers=spec["num_layers"], num_attention_heads=spec["num_heads"],
        intermediate_size=spec["intermediate_size"], type_vocab_size=2, max_position_embeddings=max(512, S),
        attention_probs_dropout_prob=spec.get("attention_probs_dropout_prob", 0.1),
    )
    torch.manual_seed(0)
    model = transformers.BertForPreTraining(config).to(device).train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.01, fused=on_gpu or None)
    autocast = (lambda: torch.autocast(device.type, dtype=torch.bfloat16)) if spec.get("bfloat16") else \
        contextlib.nullcontext
    generator = torch.Generator().manual_seed(0)
    input_ids = torch.randint(5, V, (B, S), generator=generator)
    segment_ids = torch.cat([torch.zeros(B, S // 2, dtype=torch.long), torch.ones(B, S - S // 2, dtype=torch.long)], 1)
    positions = torch.randint(1, S - 1, (B, P), generator=generator).sort(1).values
    masked_ids = torch.randint(5, V, (B, P), generator=generator)
    next_sentence = torch.randint(0, 2, (B,), generator=generator)
    input_ids, segment_ids, positions, masked_ids, next_sentence = (
        t.to(device) for t in (input_ids, segment_ids, positions, masked_ids, next_sentence))
    gather_at = positions[..., None].expand(-1, -1, H)  # [B, P, H]

    phase = torch.profiler.record_function  # the phases, named for bench/step_profile.py

    def step():
        with autocast(), phase("forward"):
            out = model.bert(input_ids=input_ids, attention_mask=torch.ones_like(input_ids),
                             token_type_ids=segment_ids)
            mlm_logits = model.cls.predictions(torch.gather(out.last_hidden_state, 1, gather_at))  # [B, P, V]
            nsp_logits = model.cls.seq_relationship(out.pooler_output)  # [B, 2]
            loss = torch.nn.functional.cross_entropy(mlm_logits.float().flatten(0, 1), masked_ids.flatten())
            loss = loss + torch.nn.functional.cross_entropy(nsp_logits.float(), next_sentence)
        with phase("optimizer"):
            optimizer.zero_grad(set_to_none=True)
        with phase("backward"):
            loss.backward()
        with phase("clipping"):
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        with phase("optimizer"):
            optimizer.step()

    def run(steps):
        for _ in range(steps):
            step()
        if on_gpu:
            torch.cuda.synchronize(device)  # the steps were only queued

    run(3)  # warm-up: allocations, the optimizer's state
    return run


if __name__ == "__main__":
    peer_process.serve(trainer)
