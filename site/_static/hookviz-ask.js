/* hookviz.ask in the browser: the site's search ranks the course's sections as hookviz.ask does.
 *
 * The index (ask-index.json, written by scripts/build_site.py from hookviz.search.build_index) holds ask's own
 * documents, the words of each and their counts, BM25's idf and parameters, the source weights, and what ask reads
 * a question with and ranks by (hookviz.search.ranking_tables: its regular expressions, Python's own patterns, which
 * JavaScript reads the same; word lists; weights and limits). This file does what hookviz/search.py does with them:
 * `ask` (normalize, traditional characters simplified, the on-topic check, the words searched), `tokenize`, BM25
 * Okapi scores (as rank_bm25 computes them, each word weighed as _query_weight does) times each source's weight, the
 * coverage check, then one result per section with the other kinds of evidence added (_Index.search).
 * tests/browser/test_site_browser.py checks that it gives hookviz.ask's answers: change both together.
 */
(function () {
  "use strict";

  function Index(data) {
    this.data = data;
    const t = data.tokenizer;
    this.stopWords = new Set(t.stop_words);
    this.stopChars = new Set(Array.from(t.stop_chars));
    this.particles = new Set(Array.from(t.particles));
    const traditional = Array.from(t.traditional);
    this.traditional = new Map();
    for (let i = 0; i + 1 < traditional.length; i += 2) this.traditional.set(traditional[i], traditional[i + 1]);
    this.topicZhAlone = new Set(t.topic_zh_alone);
    this.synonyms = new Map(t.synonyms);
    this.phrases = new Map(t.phrases);
    this.termsZh = new Map(t.terms_zh);
    this.synonymsZh = new Map(t.synonyms_zh);
    this.topicWords = new Set(t.topic_words);
    const g = (pattern) => new RegExp(pattern, "g");
    this.phrase = g(t.patterns.phrase);
    this.negation = g(t.patterns.negation);
    this.termZh = g(t.patterns.term_zh);
    this.synonymZh = g(t.patterns.synonym_zh);
    this.topicZh = g(t.patterns.topic_zh);
    this.cjkRun = g(t.patterns.cjk_run);
    this.token = g(t.patterns.token);
    this.hasCjk = new RegExp(t.patterns.has_cjk);
    this.doubled = new RegExp(t.patterns.doubled);
    this.word = new Map(data.vocabulary.map((w, i) => [w, i]));
    this.maxIdf = Math.max(...data.idf);
    // postings: word number -> [document number, count, ...]; and each document's set of word numbers
    this.postings = new Map();
    this.present = data.documents.map((doc, d) => {
      // the words and counts, as scripts/build_site.py's encode_counts writes them
      const values = doc[6] ? doc[6].split(",").map((v) => parseInt(v, 36)) : [];
      const words = new Set();
      let word = 0;
      for (let i = 0; i < values.length; i++) {
        word += Math.floor(values[i] / 2);
        const count = values[i] % 2 ? values[++i] : 1;
        let list = this.postings.get(word);
        if (!list) this.postings.set(word, (list = []));
        list.push(d, count);
        words.add(word);
      }
      return words;
    });
  }

  Index.prototype.stem = function (word) {
    if (word.length > 3 && /^[A-Za-z]+$/.test(word)) {
      const rules = [["ies", "y"], ["ied", "y"], ["ing", ""], ["ed", ""], ["es", ""], ["s", ""]];
      for (const [suffix, replacement] of rules) {
        if (word.endsWith(suffix) && word.length - suffix.length >= 3) {
          if (suffix === "s" && (word.endsWith("ss") || word.endsWith("us") || word.endsWith("is"))) break;
          word = word.slice(0, word.length - suffix.length) + replacement;
          if ((suffix === "ing" || suffix === "ed") && this.doubled.test(word) &&
              !(word.endsWith("ll") || word.endsWith("ss") || word.endsWith("zz"))) {
            word = word.slice(0, -1);
          }
          break;
        }
      }
      if (word.endsWith("e") && word.length > 3) word = word.slice(0, -1);
    }
    return this.synonyms.has(word) ? this.synonyms.get(word) : word;
  };

  /* hookviz.search._course_words_zh */
  Index.prototype.zhSynonyms = function (text) {
    for (let pass = 0; pass < this.data.tokenizer.synonym_zh_passes; pass++) {
      text = text.replace(this.synonymZh, (m) => this.synonymsZh.get(m));
    }
    return text;
  };

  /* hookviz.search.normalize, then _simplified */
  Index.prototype.normalize = function (text) {
    return Array.from(text.normalize("NFKC"), (ch) => this.traditional.get(ch) || ch).join("");
  };

  /* hookviz.search._query_weight */
  Index.prototype.queryWeight = function (word) {
    return Array.from(word).length === 1 && this.hasCjk.test(word) ? this.data.tokenizer.char_weight : 1;
  };

  /* hookviz.search.tokenize */
  Index.prototype.tokenize = function (text) {
    const words = [];
    text = this.zhSynonyms(this.normalize(text));
    text = text.toLowerCase().replace(this.negation, " not").replace(this.phrase, (m) => this.phrases.get(m));
    let negated = false;
    for (const match of text.matchAll(this.token)) {
      const token = match[0];
      if (this.hasCjk.test(token[0])) {
        for (const term of token.matchAll(this.termZh)) words.push(this.stem(this.termsZh.get(term[0])));
        const chars = Array.from(token);
        chars.forEach((ch, i) => {
          if (!this.stopChars.has(ch)) words.push(ch);
          if (i + 1 < chars.length && !this.particles.has(ch) && !this.particles.has(chars[i + 1])) {
            words.push(ch + chars[i + 1]);
          }
        });
        continue;
      }
      const parts = token.split(/[_.]+/).filter((p) => p);
      const stems = parts.map((p) => this.stem(p));
      if (parts.length > 1) words.push(stems.join("_"));
      const kept = stems.filter((s, i) => !this.stopWords.has(parts[i]) && parts[i].length > 1 &&
                                          !/^[0-9]+$/.test(parts[i]));
      words.push(...kept);
      if (negated && kept.length) words.push("not_" + kept[0]);
      negated = token === "not" || token === "never" || token === "no" || (negated && !kept.length);
    }
    return words;
  };

  /* hookviz.search._on_topic */
  Index.prototype.onTopic = function (text) {
    const english = this.tokenize(text.replace(this.cjkRun, " "));
    if (english.some((w) => this.topicWords.has(w) || w.includes("_")) || /[a-z0-9]\.[a-z_]/.test(text.toLowerCase())) {
      return true;
    }
    const found = new Set(Array.from((text + "\n" + this.zhSynonyms(text)).matchAll(this.topicZh), (m) => m[0]));
    return Array.from(found).some((w) => this.topicZhAlone.has(w)) || found.size >= 2;
  };

  /* _Index.searched_words: the distinct words the course uses, at most max_words of them (the rarest) */
  Index.prototype.searchedWords = function (words) {
    const data = this.data;
    const known = Array.from(new Set(words)).filter((w) => this.word.has(w));
    const limit = data.tokenizer.max_words;
    if (known.length <= limit) return known;
    const idf = (w) => data.idf[this.word.get(w)];
    const rarest = new Set(known.slice().sort((a, b) => idf(b) - idf(a)).slice(0, limit));
    return known.filter((w) => rarest.has(w));
  };

  /* _Index.coverage: the share of the question's weight (each word its idf) that document d holds */
  Index.prototype.coverage = function (words, d) {
    const data = this.data;
    let total = 0, held = 0;
    for (const w of new Set(words)) {
      const n = this.word.get(w);
      // _Index._unknown_weight: an English word the most any word weighs, a Chinese character the average, a pair 0
      const cjk = this.hasCjk.test(Array.from(w)[0]);
      const unknown = !cjk ? this.maxIdf : (Array.from(w).length === 1 ? data.average_idf : 0);
      const weight = n !== undefined ? data.idf[n] : unknown;
      total += weight;
      if (n !== undefined && this.present[d].has(n)) held += weight;
    }
    return total > 0 ? held / total : 0;
  };

  /* _Index.search */
  Index.prototype.rank = function (words, k, question) {
    const data = this.data;
    words = Array.from(new Set(words));
    if (!words.length) return [];
    const scores = new Float64Array(data.documents.length);
    const k1 = data.k1, b = data.b, avgdl = data.avgdl;
    for (const q of words) {
      const w = this.word.get(q);
      if (w === undefined) continue;
      const idf = data.idf[w], weight = this.queryWeight(q);
      const list = this.postings.get(w) || [];
      for (let i = 0; i < list.length; i += 2) {
        const d = list[i], tf = list[i + 1], dl = data.documents[d][4];
        scores[d] += idf * (tf * (k1 + 1) / (tf + k1 * (1 - b + b * dl / avgdl))) * weight;
      }
    }
    const order = [];
    scores.forEach((s, d) => {
      scores[d] = s * data.documents[d][5];
      if (scores[d] > 0) order.push(d);
    });
    order.sort((x, y) => scores[y] - scores[x] || x - y);  // numpy's stable argsort of -scores
    const best = order.slice(0, 10);
    const minimum = data.tokenizer.min_coverage;
    if (!best.length || Math.max(...best.map((d) => this.coverage(question || words, d))) < minimum) return [];
    const byLink = new Map();
    for (const d of order) {
      const doc = data.documents[d];
      let kinds = byLink.get(doc[0]);
      if (!kinds) byLink.set(doc[0], (kinds = new Map()));
      if (!kinds.has(doc[7])) kinds.set(doc[7], [d, scores[d]]);
    }
    const ranked = [];
    let place = 0;
    for (const kinds of byLink.values()) {
      const found = Array.from(kinds.values()).sort((x, y) => y[1] - x[1]);
      let others = 0;
      for (const item of found.slice(1)) others += item[1];
      ranked.push([found[0][1] + data.tokenizer.agreement * others, place++, found[0][0]]);
    }
    ranked.sort((x, y) => y[0] - x[0] || x[1] - y[1]);
    return ranked.slice(0, k).map(([score, , d]) => {
      const doc = data.documents[d];
      const [link, url] = data.links[doc[0]];
      return {link: link, url: url, source: data.sources[doc[1]], title: doc[2], summary: doc[3], score: score};
    });
  };

  /* hookviz.ask(question, k) on this index: the k best sections, [{link, url, source, title, summary, score}]. */
  Index.prototype.search = function (question, k) {
    const text = this.normalize(question.trim());
    if (!text) return [];
    const read = Array.from(text).slice(0, this.data.tokenizer.max_chars).join("");
    const words = this.tokenize(read);
    const searched = this.searchedWords(words);
    return this.onTopic(read) ? this.rank(searched, k, words) : [];
  };

  const cache = new Map();

  /* The index of one language, fetched once: hookvizAsk.load("ask-index.json"). */
  function load(url) {
    if (!cache.has(url)) {
      cache.set(url, fetch(url).then((r) => {
        if (!r.ok) throw new Error("cannot load " + url + ": " + r.status);
        return r.json();
      }).then((data) => new Index(data)));
    }
    return cache.get(url);
  }

  window.hookvizAsk = {load: load, Index: Index};
})();
