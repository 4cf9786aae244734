package webcmd

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"fmt"
	"os"

	"github.com/concourse/concourse/atc/atccmd"
	concoursecmd "github.com/concourse/concourse/cmd"
	"github.com/concourse/concourse/flag"
	flags "github.com/jessevdk/go-flags"
	"github.com/tedsuo/ifrit"
	"github.com/tedsuo/ifrit/grouper"
	"github.com/tedsuo/ifrit/sigmon"
	"github.com/vito/twentythousandtonnesofcrudeoil"

	"github.com/concourse-tekton/concourse-tekton/atc/tektonworker"
)

// Command is the top-level command: the subcommands of Concourse's `concourse` that a
// web node without workers needs, under the same names and flags.
type Command struct {
	Version func() `short:"v" long:"version" description:"Print the version of Concourse and exit"`

	Web         WebCommand         `command:"web"          description:"Run the web UI and build scheduler."`
	Migrate     atccmd.Migration   `command:"migrate"      description:"Run database migrations."`
	GenerateKey GenerateKeyCommand `command:"generate-key" description:"Generate an RSA key for use as the session signing key."`
}

// NewParser returns the parser of cmd, set up as Concourse's main sets up its own: flags
// namespaced with "-", the web command's credential-manager, auth-connector, metrics and
// policy flags wired in, and every flag also read from its CONCOURSE_* variable.
func NewParser(cmd *Command) *flags.Parser {
	parser := flags.NewParser(cmd, flags.HelpFlag|flags.PassDoubleDash)
	parser.NamespaceDelimiter = "-"

	web := parser.Command.Find("web")
	// Filled in by WebCommand.Execute when absent, as `concourse web` does.
	web.FindOptionByLongName("session-signing-key").Required = false
	web.FindOptionByLongName("client-secret").Required = false
	cmd.Web.WireDynamicFlags(web)

	twentythousandtonnesofcrudeoil.TheEnvironmentIsPerfectlySafe(parser, "CONCOURSE_")
	return parser
}

// WebCommand runs the ATC: API, UI, scheduler, checks and the build engine.
type WebCommand struct {
	*atccmd.RunCommand

	Tekton TektonFlags `group:"Kubernetes (Tekton)" namespace:"tekton"`

	// tekton is where builds run, when the flags say so.
	tekton *tekton
}

// Execute fills in what `concourse web` would and runs the ATC until it is signalled,
// with, when builds run on Kubernetes, the namespace's worker registered beside it.
func (cmd *WebCommand) Execute(args []string) error {
	if err := cmd.fillDefaults(); err != nil {
		return err
	}
	if cmd.Tekton.Enabled() {
		cmd.Tekton.revealSecrets = cmd.RunCommand.DisableRedactSecrets
		t, err := cmd.Tekton.openTekton()
		if err != nil {
			return err
		}
		volumes, err := cmd.Tekton.volumesDir()
		if err != nil {
			return err
		}
		logger, _ := cmd.RunCommand.Logger.Logger("tekton")
		if err := t.listen(logger, &cmd.Tekton, volumes); err != nil {
			return err
		}
		defer t.close()
		cmd.tekton = t
	}
	// Constructing the ATC calls StepperFactory, through the hook main sets.
	runner, err := cmd.RunCommand.Runner(args)
	if err != nil {
		return err
	}
	if t := cmd.tekton; t != nil {
		if err := t.share(context.Background()); err != nil {
			return err
		}
	}
	if t := cmd.tekton; t != nil && len(t.targets) > 0 && t.targets[0].registrar != nil {
		// The workers are registered once the ATC runs, and stop heartbeating first.
		members := grouper.Members{{Name: "atc", Runner: runner}}
		for _, target := range t.targets {
			defer target.backend.Close()
			members = append(members, grouper.Member{Name: "tekton-worker-" + target.worker, Runner: contextRunner(target.registrar.Run)})
			if target.sweeper != nil {
				members = append(members, grouper.Member{Name: "tekton-gc-" + target.worker, Runner: contextRunner(target.sweeper.Run)})
			}
			if r := target.reporter; r != nil {
				if r.Records != nil {
					garden := &tektonworker.Garden{Steps: tektonworker.ClientSteps(target.backend.Client()), Logger: target.registrar.Logger.Session("garden")}
					l := target.garden
					members = append(members, grouper.Member{Name: "tekton-garden-" + target.worker, Runner: contextRunner(func(ctx context.Context) error { return garden.Serve(ctx, l) })})
				}
				if r.VolumeRecords != nil {
					volumes, l, logger := target.volumes, target.baggageclaim, target.registrar.Logger.Session("baggageclaim")
					members = append(members, grouper.Member{Name: "tekton-baggageclaim-" + target.worker, Runner: contextRunner(func(ctx context.Context) error { return volumes.Serve(ctx, l, logger) })})
				}
				members = append(members, grouper.Member{Name: "tekton-reports-" + target.worker, Runner: contextRunner(r.Run)})
			}
		}
		runner = grouper.NewOrdered(os.Interrupt, members)
	}
	return <-ifrit.Invoke(sigmon.New(runner)).Wait()
}

// fillDefaults gives the web node what `concourse web` derives when it is not set: a
// session signing key (a fresh one, so tokens do not survive a restart unless
// --session-signing-key is given), the web client's secret (derived from that key, so it
// is stable with it) registered as an OAuth client, and the fly-assets directory beside
// the binary, if there is one.
func (cmd *WebCommand) fillDefaults() error {
	auth := &cmd.Auth.AuthFlags
	if auth.SigningKey == nil || auth.SigningKey.PrivateKey == nil {
		key, err := rsa.GenerateKey(rand.Reader, 2048)
		if err != nil {
			return fmt.Errorf("generating the session signing key: %w", err)
		}
		auth.SigningKey = &flag.PrivateKey{PrivateKey: key}
	}

	if cmd.Server.ClientSecret == "" {
		cmd.Server.ClientSecret = derivedSecret(auth.SigningKey.PrivateKey, cmd.Server.ClientID)
	}
	if auth.Clients == nil {
		auth.Clients = map[string]string{}
	}
	auth.Clients[cmd.Server.ClientID] = cmd.Server.ClientSecret

	if cmd.CLIArtifactsDir == "" {
		cmd.CLIArtifactsDir = flag.Dir(concoursecmd.DiscoverAsset("fly-assets"))
	}
	return nil
}

// derivedSecret is a client secret that only the holder of key can compute and that
// stays the same as long as key does.
func derivedSecret(key *rsa.PrivateKey, clientID string) string {
	return fmt.Sprintf("%x", sha256.Sum256(append(key.N.Bytes(), clientID...)))
}
