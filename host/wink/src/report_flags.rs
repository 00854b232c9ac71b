//! The policy report flags of `wink run` and `wink dev` (and the
//! `--report-api` of `wink manifests`), and the writer options they make.
//! Owns only the command line; the reports are [`wink::reports`]'.

use std::time::Duration;
use wink::reports::{ReportApi, WriterOptions};

/// A [`ReportApi`] as the command line names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ApiName {
    /// wgpolicyk8s.io/v1alpha2 PolicyReport and ClusterPolicyReport.
    Wgpolicyk8s,
    /// openreports.io/v1alpha1 Report and ClusterReport.
    Openreports,
}

/// `--report-api`.
#[derive(Debug, Clone, clap::Args)]
pub struct ReportApiFlag {
    /// The API policy reports are written in: `wgpolicyk8s`
    /// (PolicyReport, ClusterPolicyReport) or `openreports` (Report,
    /// ClusterReport); the same results and batching either way.
    ///
    /// wgpolicyk8s is the default: Kyverno 1.15 and Kubewarden 1.30 still
    /// write it by default, and most report consumers read it. Both offer
    /// openreports.io as its successor (Kubewarden already marks
    /// PolicyReport deprecated): choose openreports when what reads your
    /// reports reads it (Policy Reporter reads both). Switching leaves the
    /// other API's wink reports in place.
    #[arg(long, value_enum, default_value_t = ApiName::Wgpolicyk8s)]
    pub report_api: ApiName,
}

impl ReportApiFlag {
    pub fn api(&self) -> ReportApi {
        match self.report_api {
            ApiName::Wgpolicyk8s => ReportApi::Wgpolicyk8s,
            ApiName::Openreports => ReportApi::OpenReports,
        }
    }
}

/// The policy report flags of `wink run` and `wink dev`.
#[derive(Debug, Clone, clap::Args)]
pub struct ReportFlags {
    /// Keep plugins' policy results in reports of `--report-api` (its CRDs
    /// are installed when missing): `--policy-reports=false` to turn off.
    #[arg(long, num_args = 0..=1, default_value_t = true, default_missing_value = "true", action = clap::ArgAction::Set)]
    pub policy_reports: bool,
    /// How long the report writer gathers changes before it writes them
    /// together, milliseconds.
    #[arg(long, default_value_t = 1000)]
    pub report_batch_ms: u64,
    #[command(flatten)]
    pub api: ReportApiFlag,
}

impl ReportFlags {
    /// The report writer's options; none with `--policy-reports=false`.
    pub fn options(&self) -> Option<WriterOptions> {
        self.policy_reports.then(|| WriterOptions {
            batch: Duration::from_millis(self.report_batch_ms),
            api: self.api.api(),
            ..Default::default()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        reports: ReportFlags,
    }

    fn options(args: &[&str]) -> Option<WriterOptions> {
        Cli::try_parse_from(std::iter::once("wink").chain(args.iter().copied()))
            .unwrap()
            .reports
            .options()
    }

    #[test]
    fn the_api_is_wgpolicyk8s_unless_openreports_is_asked_for() {
        let default = options(&[]).unwrap();
        assert_eq!(default.api, ReportApi::Wgpolicyk8s);
        assert_eq!(default.batch, Duration::from_secs(1));
        let open = options(&["--report-api", "openreports", "--report-batch-ms", "200"]).unwrap();
        assert_eq!(open.api, ReportApi::OpenReports);
        assert_eq!(open.batch, Duration::from_millis(200));
        assert_eq!(
            options(&["--report-api=wgpolicyk8s"]).unwrap().api,
            ReportApi::Wgpolicyk8s
        );
        assert!(options(&["--policy-reports=false"]).is_none());
        assert!(Cli::try_parse_from(["wink", "--report-api", "policyreport"]).is_err());
        for api in ReportApi::ALL {
            let name = format!("--report-api={api}");
            assert_eq!(
                options(&[&name]).unwrap().api,
                api,
                "the flag takes each API's name"
            );
        }
    }
}
