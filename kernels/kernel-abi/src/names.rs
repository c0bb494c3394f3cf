//! How generated code names what manifests name: an op `MRotaryEmbedding` is the module
//! `mrotary_embedding`. Codegen writes the modules by it, and tools that find an op's module
//! from its manifest name (a conformance suite's build script) derive it the same way.

/// `MRotaryEmbedding` → `mrotary_embedding`: words split where a lowercase letter or digit is
/// followed by an uppercase one, so leading acronyms stay one word (`MRotary`, `QBits`), and
/// where a capital followed by a lowercase letter ends a run of capitals after the first
/// lowercase word (`SplitKMerge` → `split_k_merge`).
pub fn snake_case(name: &str) -> String {
    let chars: Vec<char> = name.chars().collect();
    let mut out = String::new();
    let mut seen_lower = false;
    for (i, &c) in chars.iter().enumerate() {
        let previous = i.checked_sub(1).map(|p| chars[p]);
        let next = chars.get(i + 1);
        let after_lower = previous.is_some_and(|p| p.is_ascii_lowercase() || p.is_ascii_digit());
        // A capital that starts a word after a run of capitals (`SplitKMerge`: the `M`), once
        // the name has had a lowercase word: a leading run stays one word (`MRotary`, `QBits`).
        let starts_word = previous.is_some_and(|p| p.is_ascii_uppercase())
            && next.is_some_and(char::is_ascii_lowercase)
            && seen_lower;
        if c.is_ascii_uppercase() && (after_lower || starts_word) {
            out.push('_');
        }
        seen_lower |= c.is_ascii_lowercase();
        out.push(c.to_ascii_lowercase());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::snake_case;

    #[test]
    fn snake_case_keeps_leading_acronyms_together() {
        assert_eq!(snake_case("MRotaryEmbedding"), "mrotary_embedding");
        assert_eq!(snake_case("BiasSoftmax"), "bias_softmax");
        assert_eq!(
            snake_case("GatedRelativePositionBias"),
            "gated_relative_position_bias"
        );
        // A one-letter word inside a name is a word of its own, as a reader splits it.
        assert_eq!(
            snake_case("LlamaDecodeAttentionSplitKMerge"),
            "llama_decode_attention_split_k_merge"
        );
        assert_eq!(snake_case("ConvLCache"), "conv_l_cache");
        assert_eq!(snake_case("QBits"), "qbits");
        assert_eq!(snake_case("SumA"), "sum_a");
        assert_eq!(snake_case("Add2D"), "add2_d");
    }
}
