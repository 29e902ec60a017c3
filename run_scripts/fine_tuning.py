"""The edge of the five fine-tuning scripts: their settings (read from their flags) handed to the
library's one driver, `bert_tf.tasks.driver.fine_tune`, and its error for a bad setting, or for a
model whose outputs turned NaN or Inf, printed as the script's one error line."""

from run_scripts.flag_settings import at_the_edge


def main(settings, kind=None):
    """A fine-tuning script's `main`: runs `settings` (a task's Settings, from
    `run_scripts.settings_flags.settings_from_flags`), one run or a search. `kind` with absl's FlagValues as
    `settings`: the settings of that registered kind read from those flags."""
    from bert_tf.tasks.driver import fine_tune

    if kind is not None:
        from bert_tf.runs import registry
        from run_scripts import settings_flags

        settings = settings_flags.settings_from_flags(registry.get(kind).settings_class(), settings)
    return at_the_edge(lambda: fine_tune(settings))
