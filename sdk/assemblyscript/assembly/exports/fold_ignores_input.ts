// Reef AssemblyScript SDK: the declaration that a command's fold does not read its input
// (docs/abi.md "The fold cache"): executions with other inputs then share the folded state.
// Re-export it next to exports/command, only when it is true:
//   export * from "reef-sdk/assembly/exports/fold_ignores_input";

/** Never called: its presence is the declaration. */
export function reef_command_fold_ignores_input(): void {}
