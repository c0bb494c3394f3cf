//! Shader validators beyond naga, for `cargo xtask codegen --check --tint --spirv-val` (and
//! `corpus` and `hub`, with the same flags).
//!
//! naga (inside `codegen`) validates every shader, but browsers compile WGSL with their own
//! compilers, which reject things naga accepts (a decimal float that rounds past `f32::MAX`,
//! a subgroup builtin without `enable subgroups;`), and naga's SPIR-V is only as good as
//! naga's back end. So, on request:
//!
//! - **Tint**, Chrome's compiler, through Dawn's node binding (`webgpu` in `xtask/js`, on its
//!   null backend: no GPU needed): `xtask/js/tint-check.mjs` compiles the text a browser gets,
//!   creates the pipeline as the runtime does (automatic layout, overrides by name, entry point
//!   `main`) and a bind group with one whole buffer per binding.
//! - **spirv-val** (Debian's `spirv-tools`) on naga's SPIR-V, for the Vulkan version wgpu asks
//!   for.
//!
//! Problems read like naga's, `<path>:<line>:<column>: Tint: <message>`, with `<path>` the
//! generated file. [`summary_table`] is the Markdown table `--check` prints.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use anyhow::{Context, Result, bail};
use kernel_codegen::GeneratedShader;
use kernel_codegen::model::Access;
use kernel_codegen::shader::{Target, TargetStatus};
use serde_json::{Value, json};

/// Where job files and SPIR-V modules go, relative to the project root.
const WORK_DIR: &str = "target/shader-check";
/// The node package folder, relative to the project root.
pub const JS_DIR: &str = "xtask/js";

/// One shader's problems (empty when it passed), in the order of the shaders given.
#[derive(Debug, Clone)]
pub struct Findings {
    pub path: String,
    pub problems: Vec<String>,
    /// What the validator could not check, and why (Tint: a pipeline whose limits the null
    /// adapter cannot grant).
    pub unchecked: Option<String>,
}

/// Every problem of `findings`, in order.
pub fn problems(findings: &[Findings]) -> Vec<String> {
    findings.iter().flat_map(|f| f.problems.clone()).collect()
}

/// What `cargo xtask corpus` and `cargo xtask hub` do after generating: `shaders` through
/// spirv-val and then Tint, each where asked (neither: nothing to do), then the
/// [`summary_table`] printed, failing with every problem found.
pub fn run_requested(
    root: &Path,
    shaders: &[GeneratedShader],
    with_tint: bool,
    with_spirv_val: bool,
) -> Result<()> {
    if !(with_tint || with_spirv_val) {
        return Ok(());
    }
    let spirv_findings = with_spirv_val
        .then(|| spirv_val(root, shaders))
        .transpose()?;
    let tint_findings = with_tint.then(|| tint(root, shaders)).transpose()?;
    println!(
        "{}",
        summary_table(shaders, spirv_findings.as_deref(), tint_findings.as_deref())
    );
    let found: Vec<String> = [spirv_findings, tint_findings]
        .into_iter()
        .flatten()
        .flat_map(|findings| problems(&findings))
        .collect();
    if found.is_empty() {
        Ok(())
    } else {
        bail!(
            "{} shader(s) failed a validator:\n{}",
            found.len(),
            found.join("\n")
        )
    }
}

/// Installs `xtask/js/node_modules` from the lock file (`npm ci`) when `webgpu` is missing.
pub fn ensure_node_packages(root: &Path) -> Result<()> {
    if root.join(JS_DIR).join("node_modules/webgpu").exists() {
        return Ok(());
    }
    for tool in ["node", "npm"] {
        if !runs(tool) {
            bail!(
                "`{tool}` is not installed: the Tint check needs Node.js 20 or later and npm \
                 (Debian: `apt-get install nodejs npm`)"
            );
        }
    }
    eprintln!("installing {JS_DIR}/node_modules (npm ci)");
    let output = Command::new("npm")
        .args([
            "ci",
            "--prefix",
            JS_DIR,
            "--no-audit",
            "--no-fund",
            "--loglevel=error",
        ])
        .current_dir(root)
        .output()
        .context("running npm ci")?;
    if !output.status.success() {
        bail!(
            "`npm ci --prefix {JS_DIR}` failed ({}):\n{}",
            output.status,
            combined(&output)
        );
    }
    Ok(())
}

/// Whether `tool --version` runs.
pub fn runs(tool: &str) -> bool {
    Command::new(tool)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// What `tint-check.mjs` gets for one shader.
#[derive(Debug, Clone)]
pub struct TintJob {
    /// Names the shader in problems.
    pub path: String,
    /// What a browser compiles: the web directives, then the file.
    pub text: String,
    /// How many lines of `text` come before the file's first line.
    pub prefix_lines: usize,
    pub features: Vec<String>,
    pub constants: Vec<(String, f64)>,
    /// Binding index, buffer binding type (`uniform`, `read-only-storage`, `storage`) and the
    /// size the shader needs (0 when any buffer does).
    pub bindings: Vec<(u32, &'static str, u32)>,
    /// Limits above WebGPU's defaults that the device must be created with: what the shader
    /// needs, as the runtime's device (which takes the adapter's limits) would have them.
    pub limits: Vec<(&'static str, u32)>,
}

/// The WebGPU limits, above their defaults, that `needs` asks for.
fn needed_limits(needs: kernel_codegen::shader::Needs) -> Vec<(&'static str, u32)> {
    let defaults = kernel_codegen::shader::Needs::DEFAULTS;
    let mut limits = Vec::new();
    if needs.storage_buffers > defaults.storage_buffers {
        limits.push(("maxStorageBuffersPerShaderStage", needs.storage_buffers));
    }
    if needs.workgroup_storage > defaults.workgroup_storage {
        limits.push(("maxComputeWorkgroupStorageSize", needs.workgroup_storage));
    }
    limits
}

impl TintJob {
    /// The job for a generated shader, with what the runtime gives its pipeline.
    pub fn for_shader(shader: &GeneratedShader) -> Self {
        let s = &shader.shader;
        TintJob {
            path: shader.path.clone(),
            text: s.web_text(),
            prefix_lines: s.web_enables.lines().count(),
            // Subgroup-matrix configurations are requirements the runtime checks against the
            // adapter, not WebGPU features a device is requested with.
            features: (s.features.iter())
                .filter(|f| {
                    kernel_abi::device::SubgroupMatrixConfig::from_feature_name(f).is_none()
                })
                .cloned()
                .collect(),
            constants: s
                .overrides
                .iter()
                .map(|o| (o.name.clone(), o.representative))
                .collect(),
            bindings: s
                .bindings
                .iter()
                .map(|b| {
                    let ty = match b.access {
                        Access::Uniform => "uniform",
                        Access::ReadOnly => "read-only-storage",
                        Access::ReadWrite => "storage",
                    };
                    (b.index, ty, b.uniform_size.unwrap_or(0))
                })
                .collect(),
            limits: needed_limits(s.translations.needs),
        }
    }

    fn to_json(&self) -> Value {
        let constants: serde_json::Map<String, Value> = self
            .constants
            .iter()
            .map(|(name, value)| (name.clone(), json!(value)))
            .collect();
        let bindings: Vec<Value> = self
            .bindings
            .iter()
            .map(|(index, ty, size)| json!({ "index": index, "type": ty, "size": size }))
            .collect();
        let limits: serde_json::Map<String, Value> = self
            .limits
            .iter()
            .map(|(name, value)| ((*name).to_owned(), json!(value)))
            .collect();
        json!({
            "path": self.path,
            "text": self.text,
            "prefixLines": self.prefix_lines,
            "features": self.features,
            "constants": constants,
            "bindings": bindings,
            "limits": limits,
        })
    }
}

/// Tint's verdict on every generated shader.
pub fn tint(root: &Path, shaders: &[GeneratedShader]) -> Result<Vec<Findings>> {
    let jobs: Vec<TintJob> = shaders.iter().map(TintJob::for_shader).collect();
    run_tint(root, &jobs, "tint-jobs.json")
}

/// Runs `tint-check.mjs` on `jobs` (written to `target/shader-check/<job_file>`). Errors are
/// problems; warnings are printed to stderr as notes.
pub fn run_tint(root: &Path, jobs: &[TintJob], job_file: &str) -> Result<Vec<Findings>> {
    ensure_node_packages(root)?;
    let dir = root.join(WORK_DIR);
    fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let job_path = dir.join(job_file);
    let body = Value::Array(jobs.iter().map(TintJob::to_json).collect());
    fs::write(&job_path, body.to_string())
        .with_context(|| format!("writing {}", job_path.display()))?;
    let output = Command::new("node")
        .arg(root.join(JS_DIR).join("tint-check.mjs"))
        .arg(&job_path)
        .current_dir(root)
        .output()
        .context("starting `node` (the Tint check needs Node.js 20 or later)")?;
    if !output.status.success() {
        bail!(
            "tint-check.mjs failed ({}):\n{}",
            output.status,
            combined(&output)
        );
    }
    let stdout = String::from_utf8_lossy(&output.stdout);
    let mut results = Vec::new();
    for line in stdout.lines() {
        match serde_json::from_str::<Value>(line) {
            Ok(value) if value.is_object() => results.push(value),
            _ => eprintln!("tint-check: {line}"),
        }
    }
    if results.len() != jobs.len() {
        bail!(
            "tint-check.mjs reported {} of {} shaders:\n{}",
            results.len(),
            jobs.len(),
            combined(&output)
        );
    }
    let mut findings = Vec::new();
    for (job, result) in jobs.iter().zip(&results) {
        if result["path"].as_str() != Some(job.path.as_str()) {
            bail!(
                "tint-check.mjs answered for {} instead of {}",
                result["path"],
                job.path
            );
        }
        let mut problems = Vec::new();
        for message in result["messages"].as_array().into_iter().flatten() {
            let text = dawn_message(message["message"].as_str().unwrap_or_default());
            let line = message["line"].as_u64().unwrap_or(0);
            let column = message["column"].as_u64().unwrap_or(0);
            let place = if line == 0 {
                job.path.clone()
            } else {
                format!("{}:{line}:{column}", job.path)
            };
            match message["type"].as_str() {
                Some("error") => problems.push(format!("{place}: Tint: {text}")),
                kind => eprintln!("note: {place}: Tint {}: {text}", kind.unwrap_or("message")),
            }
        }
        for (key, what) in [("pipeline", "pipeline"), ("bindGroup", "bind group")] {
            if let Some(error) = result[key].as_str() {
                problems.push(format!(
                    "{}: Tint: {what}: {}",
                    job.path,
                    dawn_message(error)
                ));
            }
        }
        let unchecked = result["unchecked"].as_str().map(str::to_owned);
        if let Some(why) = &unchecked {
            eprintln!("note: {}: Tint: {why}", job.path);
        }
        findings.push(Findings {
            path: job.path.clone(),
            problems,
            unchecked,
        });
    }
    Ok(findings)
}

/// Dawn's error text without the trailing API call (` - While calling [Device]...`); the
/// context lines before it (which binding, which layout) stay, indented.
fn dawn_message(message: &str) -> String {
    message
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with("- While calling"))
        .collect::<Vec<_>>()
        .join("\n    ")
}

/// spirv-val's verdict on naga's SPIR-V of every shader, for the Vulkan version matching the
/// module's SPIR-V version. The modules are kept in `target/shader-check/spirv/`.
pub fn spirv_val(root: &Path, shaders: &[GeneratedShader]) -> Result<Vec<Findings>> {
    if !runs("spirv-val") {
        bail!("`spirv-val` is not installed (Debian: `apt-get install spirv-tools`)");
    }
    let dir = root.join(WORK_DIR).join("spirv");
    let mut modules: Vec<(PathBuf, &'static str)> = Vec::new();
    for shader in shaders {
        let relative = shader
            .path
            .strip_prefix(crate::GENERATED_DIR)
            .unwrap_or(&shader.path)
            .trim_start_matches('/');
        let mut file = dir.join(Path::new(relative).with_extension("spv"));
        // File systems take names of up to 255 bytes; a long combination's is shortened,
        // kept apart by the shader's digest (messages name the shader by its path).
        if let Some(name) = file.file_name().and_then(|n| n.to_str())
            && name.len() > 200
        {
            let mut cut = 150;
            while !name.is_char_boundary(cut) {
                cut -= 1;
            }
            let short = format!("{}-{}.spv", &name[..cut], shader.shader.digest);
            file.set_file_name(short);
        }
        if let Some(parent) = file.parent() {
            fs::create_dir_all(parent).with_context(|| format!("creating {}", parent.display()))?;
        }
        let translations = &shader.shader.translations;
        let bytes: Vec<u8> = translations
            .spirv
            .iter()
            .flat_map(|w| w.to_le_bytes())
            .collect();
        fs::write(&file, bytes).with_context(|| format!("writing {}", file.display()))?;
        let env = match translations.spirv_version {
            (1, 0) => "vulkan1.0",
            (1, 1..=3) => "vulkan1.1",
            (1, 4) => "vulkan1.1spv1.4",
            (1, 5) => "vulkan1.2",
            (1, 6) => "vulkan1.3",
            (major, minor) => bail!("{}: SPIR-V {major}.{minor} has no Vulkan", shader.path),
        };
        modules.push((file, env));
    }
    // One file per run; a few runs at a time.
    let results: Mutex<Vec<Option<Result<Output, String>>>> = Mutex::new(vec![None; modules.len()]);
    let next = AtomicUsize::new(0);
    let workers = std::thread::available_parallelism().map_or(2, |n| n.get().min(4));
    std::thread::scope(|scope| {
        for _ in 0..workers {
            scope.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some((file, env)) = modules.get(i) else {
                        break;
                    };
                    let output = Command::new("spirv-val")
                        .args(["--target-env", env])
                        .arg(file)
                        .output()
                        .map_err(|e| format!("starting spirv-val: {e}"));
                    if let Ok(mut results) = results.lock() {
                        results[i] = Some(output);
                    }
                }
            });
        }
    });
    let results = results.into_inner().unwrap_or_default();
    let mut findings = Vec::new();
    for ((shader, (_, env)), output) in shaders.iter().zip(&modules).zip(results) {
        let mut problems = Vec::new();
        let mut unchecked = None;
        match output {
            Some(Ok(output)) if output.status.success() => {}
            // SPIRV-Tools before 2023.2 (Debian 12's) do not know `CooperativeMatrixKHR`
            // (capability 6022): the module is not judged rather than failed.
            Some(Ok(output)) if combined(&output).contains(UNKNOWN_COOPERATIVE_MATRIX) => {
                unchecked = Some(
                    "this spirv-val predates SPV_KHR_cooperative_matrix (capability 6022)"
                        .to_owned(),
                );
            }
            Some(Ok(output)) => problems.push(format!(
                "{}: spirv-val --target-env {env}: {}",
                shader.path,
                combined(&output).trim().replace('\n', "\n    ")
            )),
            Some(Err(error)) => bail!("{}: {error}", shader.path),
            None => bail!("{}: spirv-val did not run", shader.path),
        }
        findings.push(Findings {
            path: shader.path.clone(),
            problems,
            unchecked,
        });
    }
    Ok(findings)
}

/// What an older spirv-val says of a module with cooperative matrices.
const UNKNOWN_COOPERATIVE_MATRIX: &str = "Invalid capability operand: 6022";

fn combined(output: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

/// The Markdown table `--check` prints: per op, the number of shaders and `passed/total` for
/// naga's validation, each of naga's translations (`n/a` where no wgpu backend of that
/// language has a feature the shader needs), spirv-val and Tint (`not run` without the flag).
pub fn summary_table(
    shaders: &[GeneratedShader],
    spirv: Option<&[Findings]>,
    tint: Option<&[Findings]>,
) -> String {
    #[derive(Default)]
    struct Row {
        shaders: usize,
        targets: BTreeMap<Target, (usize, usize)>, // (translated, not applicable)
        spirv_passed: usize,
        spirv_unchecked: usize,
        tint_passed: usize,
        tint_unchecked: usize,
    }
    let passed = |findings: Option<&[Findings]>, path: &str| {
        findings.is_some_and(|f| f.iter().any(|f| f.path == path && f.problems.is_empty()))
    };
    let mut order: Vec<&str> = Vec::new();
    let mut rows: BTreeMap<&str, Row> = BTreeMap::new();
    for shader in shaders {
        let op = shader.op.as_str();
        if !order.contains(&op) {
            order.push(op);
        }
        for name in [op, "all"] {
            let row = rows.entry(name).or_default();
            row.shaders += 1;
            for (target, status) in &shader.shader.translations.status {
                let counts = row.targets.entry(*target).or_default();
                match status {
                    TargetStatus::Translated => counts.0 += 1,
                    TargetStatus::NotApplicable(_) => counts.1 += 1,
                }
            }
            row.spirv_passed += usize::from(passed(spirv, &shader.path));
            row.spirv_unchecked += usize::from(spirv.is_some_and(|findings| {
                findings
                    .iter()
                    .any(|f| f.path == shader.path && f.unchecked.is_some())
            }));
            row.tint_passed += usize::from(passed(tint, &shader.path));
            row.tint_unchecked += usize::from(tint.is_some_and(|findings| {
                findings
                    .iter()
                    .any(|f| f.path == shader.path && f.unchecked.is_some())
            }));
        }
    }
    let mut table = String::from("| Op | Shaders | naga (WGSL) |");
    for target in Target::ALL {
        table.push_str(&format!(" {target} |"));
    }
    table.push_str(" spirv-val | Tint |\n|---|--:|--:|");
    table.push_str(&"--:|".repeat(Target::ALL.len() + 2));
    table.push('\n');
    let validator = |ran: bool, passed: usize, total: usize| {
        if ran {
            format!("{passed}/{total}")
        } else {
            "not run".to_owned()
        }
    };
    for name in order.iter().copied().chain(["all"]) {
        let Some(row) = rows.get(name) else { continue };
        let label = if name == "all" {
            "**all**".to_owned()
        } else {
            format!("`{name}`")
        };
        // naga validated every shader: codegen fails otherwise.
        table.push_str(&format!("| {label} | {0} | {0}/{0} |", row.shaders));
        for target in Target::ALL {
            let (translated, na) = row.targets.get(&target).copied().unwrap_or_default();
            let total = row.shaders - na;
            if na == 0 {
                table.push_str(&format!(" {translated}/{total} |"));
            } else {
                table.push_str(&format!(" {translated}/{total} ({na} n/a) |"));
            }
        }
        let mut tint_cell = validator(tint.is_some(), row.tint_passed, row.shaders);
        if row.tint_unchecked > 0 {
            tint_cell.push_str(&format!(" ({} not fully checked)", row.tint_unchecked));
        }
        let mut spirv_cell = validator(spirv.is_some(), row.spirv_passed, row.shaders);
        if row.spirv_unchecked > 0 {
            spirv_cell.push_str(&format!(" ({} not judged)", row.spirv_unchecked));
        }
        table.push_str(&format!(" {spirv_cell} | {tint_cell} |\n"));
    }
    table
}

#[cfg(test)]
mod tests {
    //! Fixtures in `xtask/tests/tint/<case>/`: `shader.wgsl` (the file's text, which naga must
    //! accept), `case.json` (`features`, `bindings`, `constants`, optional `webEnables` put in
    //! front for Tint) and `expected.txt` (the exact problems; `UPDATE_EXPECT=1` rewrites it).

    use super::*;

    fn naga_accepts(text: &str, features: &[String]) -> Result<(), String> {
        use naga::valid::{Capabilities, ValidationFlags, Validator};
        let module = naga::front::wgsl::parse_str(text).map_err(|e| e.emit_to_string(text))?;
        let mut capabilities = Capabilities::empty();
        for feature in features {
            capabilities |= match feature.as_str() {
                "shader-f16" => Capabilities::SHADER_FLOAT16,
                "subgroups" => Capabilities::SUBGROUP,
                other => return Err(format!("unknown feature {other}")),
            };
        }
        Validator::new(ValidationFlags::all(), capabilities)
            .validate(&module)
            .map(drop)
            .map_err(|e| e.emit_to_string(text))
    }

    fn job(root: &Path, case: &Path) -> TintJob {
        let read = |name: &str| {
            fs::read_to_string(case.join(name))
                .unwrap_or_else(|e| panic!("{}/{name}: {e}", case.display()))
        };
        let text = read("shader.wgsl");
        let spec: Value = serde_json::from_str(&read("case.json"))
            .unwrap_or_else(|e| panic!("{}/case.json: {e}", case.display()));
        let features: Vec<String> = spec["features"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|f| f.as_str().map(str::to_owned))
            .collect();
        let path = case
            .join("shader.wgsl")
            .strip_prefix(root)
            .map(|p| p.to_string_lossy().replace('\\', "/"))
            .unwrap_or_default();
        if let Err(message) = naga_accepts(&text, &features) {
            panic!("naga must accept {path}:\n{message}");
        }
        let web_enables = spec["webEnables"].as_str().unwrap_or_default();
        TintJob {
            path,
            text: format!("{web_enables}{text}"),
            prefix_lines: web_enables.lines().count(),
            features,
            constants: spec["constants"]
                .as_object()
                .into_iter()
                .flatten()
                .map(|(name, value)| (name.clone(), value.as_f64().unwrap_or_default()))
                .collect(),
            bindings: spec["bindings"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|b| {
                    let ty = match b["type"].as_str() {
                        Some("uniform") => "uniform",
                        Some("read-only-storage") => "read-only-storage",
                        Some("storage") => "storage",
                        other => panic!("{}: binding type {other:?}", case.display()),
                    };
                    let number = |key: &str| b[key].as_u64().and_then(|n| u32::try_from(n).ok());
                    (
                        number("index").unwrap_or(0),
                        ty,
                        number("size").unwrap_or(0),
                    )
                })
                .collect(),
            limits: Vec::new(),
        }
    }

    /// Each fixture is a shader naga accepts; Tint reports exactly `expected.txt`. Needs
    /// Node.js: it installs `xtask/js/node_modules` when missing and fails without node.
    #[test]
    fn tint_fixtures() {
        let root = crate::project_root();
        let fixtures = root.join("xtask/tests/tint");
        let mut cases: Vec<PathBuf> = fs::read_dir(&fixtures)
            .expect("xtask/tests/tint")
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.is_dir())
            .collect();
        cases.sort();
        assert!(!cases.is_empty(), "no fixtures in {}", fixtures.display());
        let jobs: Vec<TintJob> = cases.iter().map(|case| job(&root, case)).collect();
        let findings = match run_tint(&root, &jobs, "tint-fixtures.json") {
            Ok(findings) => findings,
            Err(err) => panic!("the Tint check could not run: {err:#}"),
        };
        for (case, found) in cases.iter().zip(&findings) {
            let mut actual = found.problems.join("\n");
            if !actual.is_empty() {
                actual.push('\n');
            }
            expect_test::expect_file![case.join("expected.txt")].assert_eq(&actual);
        }
    }
}
