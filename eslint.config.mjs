// ESLint as Effect's own repositories set it up: typescript-eslint's recommended rules and
// @effect/eslint-plugin's dprint rule with Effect's formatting settings. `make lint` runs it;
// `make format` applies every fix (dprint's layout included).
import * as effectEslint from "@effect/eslint-plugin"
import js from "@eslint/js"
import { defineConfig } from "eslint/config"
import tseslint from "typescript-eslint"

// The tree is formatted (commit df422ca), so layout is checked: a file dprint would change fails
// `make lint`, and `make format` fixes it. False would leave layout to `make format` alone.
const treeFormatted = true

const layout = treeFormatted || process.env.VDB_FORMAT === "1" ? "error" : "off"

export default defineConfig(
  {
    ignores: [
      "node_modules/",
      ".tools/",
      ".data/",
      ".cache/",
      "bench/results/",
      "test/fixtures/",
      "test/artifacts/"
    ]
  },
  {
    files: ["**/*.ts", "**/*.mjs", "**/*.cjs"],
    extends: [js.configs.recommended, tseslint.configs.recommended, effectEslint.configs.dprint],
    rules: {
      // As in Effect's repositories: generators without yield are Effect.gen bodies, and
      // TypeScript already checks what these core rules guess at.
      "no-fallthrough": "off",
      "no-irregular-whitespace": "off",
      "no-unused-vars": "off",
      "require-yield": "off",
      "prefer-rest-params": "off",
      "prefer-spread": "off",
      "@typescript-eslint/no-non-null-assertion": "off",
      "@typescript-eslint/no-explicit-any": "off",
      "@typescript-eslint/no-empty-object-type": "off",
      "@typescript-eslint/no-unsafe-function-type": "off",
      "@typescript-eslint/no-wrapper-object-types": "off",
      "@typescript-eslint/ban-ts-comment": "off",
      "@typescript-eslint/no-array-constructor": "off",
      "@typescript-eslint/no-namespace": "off",
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_", varsIgnorePattern: "^_" }],
      // Ours, not Effect's: the regexes that name control characters are the ones rejecting them, and
      // `cond ? (a = x) : (b = x)` is a statement the sealed-block grammar uses on purpose.
      "no-control-regex": "off",
      "@typescript-eslint/no-unused-expressions": ["error", { allowTernary: true }],

      // layout: fixed by `make format`, checked once the tree is formatted (treeFormatted above).
      "object-shorthand": layout,
      "@typescript-eslint/array-type": [layout, { default: "generic", readonly: "generic" }],
      "@effect/dprint": [layout, {
        config: {
          indentWidth: 2,
          lineWidth: 120,
          semiColons: "asi",
          quoteStyle: "alwaysDouble",
          trailingCommas: "never",
          operatorPosition: "maintain",
          "arrowFunction.useParentheses": "force"
        }
      }]
    }
  },
  {
    // The two configuration files run under Node.
    files: ["**/*.mjs", "**/*.cjs"],
    languageOptions: { globals: { process: "readonly", module: "writable", require: "readonly" } }
  }
)
