//! Tests of reading reports back and drawing their charts.
