package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"sort"
	"strings"

	"mesh/hook"
)

func (r *rabbit) hello(ctx context.Context) error {
	_, err := r.admin()
	return err
}

// adminFault says whether the administrator can use the API now (GET
// /api/whoami as it): its login refused or the API out of reach is the
// provider fault, nil when it works.
func (r *rabbit) adminFault(ctx context.Context) *hook.Fault {
	admin, err := r.admin()
	if err == nil {
		_, err = r.as(ctx, admin, "GET", "/whoami", nil, nil, false)
	}
	if err == nil {
		return nil
	}
	class := hook.ClassOf(err)
	if class == "" {
		class = hook.Refused
	}
	return &hook.Fault{Class: class, Error: err.Error()}
}

// tagsFor is the tags of a user the instance made, retired or not: the
// instance "" is a mark from before instances (mesh-provide alone).
func tagsFor(retired bool, instance string) []string {
	tags := []string{managementTag, markTag}
	if instance != "" {
		tags = append(tags, instanceTag(instance))
	}
	if retired {
		tags = append(tags, retiredTag)
	}
	return tags
}

// instanceTag is the tag naming the instance (module@machine) that made a user.
func instanceTag(instance string) string { return markTag + ":" + instance }

// makerOf is the instance a user's tags say made it ("" for a mark from
// before instances: mesh-provide alone); false when it carries no mark.
func makerOf(tags tagsList) (string, bool) {
	for _, t := range tags {
		if strings.HasPrefix(t, markTag+":") {
			return strings.TrimPrefix(t, markTag+":"), true
		}
	}
	return "", tags.has(markTag)
}

// me is the provider instance the request is made for (refused when none is said).
func me(ctx context.Context) (string, error) {
	if p := hook.Provider(ctx); p != "" {
		return p, nil
	}
	return "", hook.Errorf(hook.Refused, "the request names no provider instance and %s is not set", hook.ProviderVar)
}

func sameTags(a tagsList, b []string) bool {
	x := append([]string(nil), a...)
	y := append([]string(nil), b...)
	sort.Strings(x)
	sort.Strings(y)
	return strings.Join(x, ",") == strings.Join(y, ",")
}

func (r *rabbit) ensure(ctx context.Context, c hook.Consumer, secret string) (hook.Result, error) {
	if secret == "" {
		return hook.Result{}, hook.Errorf(hook.Refused, "ensure %s: the request carries no secret", c.Name)
	}
	instance := c.Provider
	if instance == "" {
		var err error
		if instance, err = me(ctx); err != nil {
			return hook.Result{}, err
		}
	}
	admin, err := r.admin()
	if err != nil {
		return hook.Result{}, err
	}
	name := c.Name
	u, found, err := r.getUser(ctx, admin, name)
	if err != nil {
		return hook.Result{}, err
	}
	if !found {
		// A vhost without its user is a person's: the hook makes the user
		// (its mark) first and deletes it last.
		if exists, err := r.as(ctx, admin, "GET", "/vhosts/"+esc(name), nil, nil, true); err != nil {
			return hook.Result{}, err
		} else if exists {
			return hook.Result{}, notOurs("vhost", name)
		}
		if err := r.putUser(ctx, admin, name, secret, user{}, tagsFor(false, instance)); err != nil {
			return hook.Result{}, err
		}
		return hook.Result{}, r.grant(ctx, admin, name)
	}
	maker, marked := makerOf(u.Tags)
	if !marked {
		return hook.Result{}, notOurs("user", name)
	}
	if maker != "" && maker != instance {
		return hook.Result{}, hook.Errorf(hook.Refused, "user %s was made by %s (its tag %s): not touching it", name, maker, instanceTag(maker))
	}
	// A mark from before instances (maker ""): adopted, its tags compared
	// as they were, then its instance's tag set.
	adopting := maker == ""
	var mended []string
	retired := u.Tags.has(retiredTag)
	passwordOK := hashIs(u, secret)
	tagsOK := sameTags(u.Tags, tagsFor(retired, maker))
	if adopting {
		hook.Logf("adopting user %s (marked before instances) for %s", name, instance)
	}
	if !passwordOK || !tagsOK || adopting {
		password := ""
		if !passwordOK {
			password = secret
			// Mended whenever it set the password: the loop, which knows
			// when it minted a new secret, does not count a rotation.
			mended = append(mended, "its password was not the minted secret")
		}
		if !tagsOK {
			mended = append(mended, describe("its tags were %q", strings.Join(u.Tags, ",")))
		}
		if err := r.putUser(ctx, admin, name, password, u, tagsFor(retired, instance)); err != nil {
			return hook.Result{}, err
		}
	}
	if !retired {
		// Retired: its permissions stay off (re-enabling is the loop's call).
		more, err := r.restore(ctx, admin, name)
		if err != nil {
			return hook.Result{}, err
		}
		mended = append(mended, more...)
	}
	if len(mended) == 0 {
		return hook.Result{}, nil
	}
	return hook.Result{Mended: "user " + name + ": " + strings.Join(mended, "; ") + "; set again"}, nil
}

// restore brings name's vhost and its user's permissions there to what
// they should be; it says what it found otherwise.
func (r *rabbit) restore(ctx context.Context, admin login, name string) ([]string, error) {
	var mended []string
	var v vhost
	exists, err := r.as(ctx, admin, "GET", "/vhosts/"+esc(name), nil, &v, true)
	if err != nil {
		return nil, err
	}
	if exists {
		whole, err := r.whole(ctx, admin, name)
		if err != nil {
			return nil, err
		}
		if !whole {
			// A PUT of the vhost cut off half way (a killed call) leaves
			// it without some of its default exchanges, which no request
			// can declare: the hook's own vhost is made again.
			if _, err := r.as(ctx, admin, "DELETE", "/vhosts/"+esc(name), nil, nil, true); err != nil {
				return nil, err
			}
			exists = false
			mended = append(mended, describe("its vhost %s was half made (default exchanges missing): made again", name))
		}
	} else {
		mended = append(mended, describe("its vhost %s was missing", name))
	}
	if down := v.down(); exists && len(down) > 0 {
		// A PUT of the vhost cut off half way (a killed call) may leave
		// it stopped, every use of it failing: start it again.
		for _, node := range down {
			if _, err := r.as(ctx, admin, "POST", "/vhosts/"+esc(name)+"/start/"+esc(node), nil, nil, false); err != nil {
				return nil, err
			}
		}
		mended = append(mended, describe("its vhost %s was stopped on %s", name, strings.Join(down, ", ")))
	}
	var p permission
	has := false
	if exists {
		if has, err = r.as(ctx, admin, "GET", "/permissions/"+esc(name)+"/"+esc(name), nil, &p, true); err != nil {
			return nil, err
		}
	}
	if !has || p != everything {
		if err := r.grant(ctx, admin, name); err != nil {
			return nil, err
		}
		if has {
			mended = append(mended, describe("its permissions on vhost %s were %q %q %q", name, p.Configure, p.Write, p.Read))
		} else if exists {
			mended = append(mended, describe("it had no permissions on vhost %s", name))
		}
	}
	return mended, nil
}

// defaultExchanges is the exchanges RabbitMQ declares in every vhost it makes.
const defaultExchanges = `^(amq\.(direct|fanout|headers|match|rabbitmq\.trace|topic))?$`

// whole reports whether vhost name has all its default exchanges (the
// seven that defaultExchanges matches).
func (r *rabbit) whole(ctx context.Context, admin login, name string) (bool, error) {
	query := url.Values{"page": {"1"}, "page_size": {"100"}, "columns": {"name"}, "use_regex": {"true"}, "name": {defaultExchanges}}
	var page struct {
		Filtered int `json:"filtered_count"`
	}
	found, err := r.as(ctx, admin, "GET", "/exchanges/"+esc(name)+"?"+query.Encode(), nil, &page, true)
	return found && page.Filtered == 7, err
}

// grant makes name's vhost (idempotent) and gives its user everything there.
func (r *rabbit) grant(ctx context.Context, admin login, name string) error {
	if _, err := r.as(ctx, admin, "PUT", "/vhosts/"+esc(name), map[string]string{}, nil, false); err != nil {
		return err
	}
	_, err := r.as(ctx, admin, "PUT", "/permissions/"+esc(name)+"/"+esc(name), everything, nil, false)
	return err
}

func (r *rabbit) check(ctx context.Context, c hook.Consumer, secret string) (hook.Result, error) {
	return hook.Result{}, r.asConsumer(ctx, login{c.Name, secret}, c.Name)
}

func (r *rabbit) held(ctx context.Context) ([]hook.Held, error) {
	instance, err := me(ctx)
	if err != nil {
		return nil, err
	}
	admin, err := r.admin()
	if err != nil {
		return nil, err
	}
	var users []user
	if _, err := r.as(ctx, admin, "GET", "/users", nil, &users, false); err != nil {
		return nil, err
	}
	held := []hook.Held{}
	for _, u := range users {
		if !u.Tags.has(instanceTag(instance)) {
			continue
		}
		if !hook.ValidName(u.Name) {
			hook.Logf("user %q carries the tag %s but is no consumer name: not listed", u.Name, markTag)
			continue
		}
		held = append(held, hook.Held{Consumer: u.Name, Retired: u.Tags.has(retiredTag)})
	}
	return held, nil
}

// ours is name's user when the asking instance made it (false: there is
// none, or another instance's, or one marked before instances: left be).
func (r *rabbit) ours(ctx context.Context, admin login, name string) (user, bool, error) {
	instance, err := me(ctx)
	if err != nil {
		return user{}, false, err
	}
	u, found, err := r.getUser(ctx, admin, name)
	if err != nil || !found {
		return u, false, err
	}
	maker, marked := makerOf(u.Tags)
	if !marked {
		return u, false, notOurs("user", name)
	}
	return u, maker == instance, nil
}

func (r *rabbit) retire(ctx context.Context, name string) error {
	admin, err := r.admin()
	if err != nil {
		return err
	}
	u, found, err := r.ours(ctx, admin, name)
	if err != nil || !found {
		return err
	}
	// The permissions first: a call killed after it leaves a user that
	// reaches nothing, and held still lists it as not retired, so the loop
	// retires it again.
	if _, err := r.as(ctx, admin, "DELETE", "/permissions/"+esc(name)+"/"+esc(name), nil, nil, true); err != nil {
		return err
	}
	instance, _ := makerOf(u.Tags)
	if !sameTags(u.Tags, tagsFor(true, instance)) {
		if err := r.putUser(ctx, admin, name, "", u, tagsFor(true, instance)); err != nil {
			return err
		}
	}
	_, err = r.as(ctx, admin, "DELETE", "/connections/username/"+esc(name), nil, nil, true)
	return err
}

func (r *rabbit) reEnable(ctx context.Context, name string) error {
	admin, err := r.admin()
	if err != nil {
		return err
	}
	u, found, err := r.ours(ctx, admin, name)
	if err != nil {
		return err
	}
	if !found {
		return hook.Errorf(hook.Refused, "re-enable %s: there is no user %s this instance made to re-enable", name, name)
	}
	if _, err := r.restore(ctx, admin, name); err != nil {
		return err
	}
	instance, _ := makerOf(u.Tags)
	if !sameTags(u.Tags, tagsFor(false, instance)) {
		return r.putUser(ctx, admin, name, "", u, tagsFor(false, instance))
	}
	return nil
}

func (r *rabbit) delete(ctx context.Context, name string) error {
	admin, err := r.admin()
	if err != nil {
		return err
	}
	_, found, err := r.ours(ctx, admin, name)
	if err != nil || !found {
		return err
	}
	// The vhost first, the user (the mark) last: a call killed half way
	// leaves a user held still lists, for delete to finish.
	if _, err := r.as(ctx, admin, "DELETE", "/vhosts/"+esc(name), nil, nil, true); err != nil {
		return err
	}
	if _, err := r.as(ctx, admin, "DELETE", "/users/"+esc(name), nil, nil, true); err != nil {
		return err
	}
	return nil
}

// change (by-hand): another password on name's user, as a person would.
func (r *rabbit) change(ctx context.Context, name string) error {
	admin, err := r.admin()
	if err != nil {
		return err
	}
	u, found, err := r.getUser(ctx, admin, name)
	if err != nil {
		return err
	}
	if !found {
		return hook.Errorf(hook.Refused, "by-hand change %s: there is no user %s", name, name)
	}
	other := make([]byte, 16)
	if _, err := rand.Read(other); err != nil {
		return err
	}
	return r.putUser(ctx, admin, name, hex.EncodeToString(other), u, u.Tags)
}

// make (by-hand): a user, its vhost and its permissions there, as a person
// would make them: tag management only, no mark.
func (r *rabbit) make(ctx context.Context, name, secret string) error {
	admin, err := r.admin()
	if err != nil {
		return err
	}
	if err := r.putUser(ctx, admin, name, secret, user{}, []string{managementTag}); err != nil {
		return err
	}
	return r.grant(ctx, admin, name)
}

// works (by-hand): whether name passes the aliveness test on its vhost.
func (r *rabbit) works(ctx context.Context, name, secret string) (bool, error) {
	return r.reaches(ctx, login{name, secret}, name)
}

// reach (by-hand): whether name passes the aliveness test on target's vhost.
func (r *rabbit) reach(ctx context.Context, name, secret, target string) (bool, error) {
	return r.reaches(ctx, login{name, secret}, target)
}

func (r *rabbit) reaches(ctx context.Context, who login, vhost string) (bool, error) {
	err := r.asConsumer(ctx, who, vhost)
	switch hook.ClassOf(err) {
	case "":
		return true, nil
	case hook.CredentialsRejected, hook.Refused:
		return false, nil
	}
	return false, err
}

// remove (by-hand): what make made.
func (r *rabbit) remove(ctx context.Context, name string) error {
	admin, err := r.admin()
	if err != nil {
		return err
	}
	u, found, err := r.getUser(ctx, admin, name)
	if err != nil {
		return err
	}
	if found && u.Tags.has(markTag) {
		return hook.Errorf(hook.Refused, "by-hand remove %s: the user is the hook's, not a person's", name)
	}
	if _, err := r.as(ctx, admin, "DELETE", "/vhosts/"+esc(name), nil, nil, true); err != nil {
		return err
	}
	_, err = r.as(ctx, admin, "DELETE", "/users/"+esc(name), nil, nil, true)
	return err
}
