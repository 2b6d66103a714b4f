// Reef AssemblyScript SDK, as the package "reef-sdk": `import { Value, actor } from "reef-sdk"`.
export * from "./assembly/index";
